"""Check this machine against the version table: the library behind ``mindspeed-ms doctor``.

:func:`run_checks` returns one :class:`Check` per component — Python, MindSpore, MSAdapter (and
whether ``import torch`` gives MSAdapter's torch), a real PyTorch beside it, the CANN toolkit, the NPU
driver, megatron-core, ``msrun`` and the ``--ai-framework`` a training script would get — each
``ok``, ``warn`` or ``fail`` with what to do. Everything machine-dependent can be injected (the
environment, ``PATH``, the module search path, the Python version), so tests can stage machines.

Doctor never imports MindSpore or MSAdapter into its own process (they take seconds and change
global state): versions come from installed distribution metadata, and the ``import torch`` probe
runs in a child interpreter. Machines without CANN or an NPU get ``warn`` rows (MindSpore then
computes on its CPU backend), not failures.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Callable

from mindspeed_ms import versions
from mindspeed_ms.adaptation.errors import FrameworkError
from mindspeed_ms.adaptation.settings import FRAMEWORK_ENV
from mindspeed_ms.engine.errors import SettingError

from .machine import Machine, run_text

__all__ = ["Check", "CHECK_NAMES", "STATUSES", "run_checks", "has_failures"]

logger = logging.getLogger(__name__)

#: The statuses a check can have, best first.
STATUSES = ("ok", "warn", "fail")
#: The checks :func:`run_checks` runs, in order.
CHECK_NAMES = ("python", "mindspore", "msadapter", "import torch", "real torch", "cann", "npu", "megatron-core",
               "msrun", "ai-framework")

_CPU = "MindSpore computes on its CPU backend"
_ON_ASCEND = "on an Ascend machine"
# Distributions whose files MSAdapter's wheel also ships (torch/, torch_npu/, torchvision/).
_TORCH_DISTRIBUTIONS = ("torch", "torch-npu", "torchvision")
_PROBE_MARKER = "mindspeed-ms-doctor-probe:"
# Runs in a child interpreter: sys.argv[1] is the module search path as JSON, or "null" to keep it.
_PROBE = f"""
import json, sys
search = json.loads(sys.argv[1])
if search is not None:
    sys.path[:] = search
result = {{}}
try:
    import msadapter
except BaseException as exc:
    result["error"] = "import msadapter: %s: %s" % (type(exc).__name__, exc)
else:
    try:
        import torch
    except BaseException as exc:
        result["error"] = "import torch after import msadapter: %s: %s" % (type(exc).__name__, exc)
    else:
        loader = type(getattr(getattr(torch, "__spec__", None), "loader", None))
        result["loader"] = "%s.%s" % (loader.__module__, loader.__qualname__)
        result["file"] = getattr(torch, "__file__", None)
        result["msadapter_file"] = getattr(msadapter, "__file__", None)
        result["api_version"] = str(getattr(torch, "__version__", "?"))
print({_PROBE_MARKER!r} + json.dumps(result))
"""


@dataclass(frozen=True)
class Check:
    """The outcome of one check.

    Attributes:
        name: what was checked (one of :data:`CHECK_NAMES`).
        status: ``"ok"``, ``"warn"`` or ``"fail"``.
        found: what this machine has.
        expected: what the version table asks for.
        action: what to do about it (``""`` when nothing).
    """

    name: str
    status: str
    found: str
    expected: str
    action: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"check {self.name!r}: status {self.status!r} is not one of {', '.join(STATUSES)}")

    def to_dict(self) -> dict[str, str]:
        """Return the check as a JSON-ready dict."""
        return asdict(self)


def has_failures(checks: Sequence[Check]) -> bool:
    """Return whether any check failed (``mindspeed-ms doctor`` then exits 1)."""
    return any(check.status == "fail" for check in checks)


def _against_pin(machine: Machine, name: str, pin: str, expected: str, requirement: str, install: str) -> Check:
    """Compare an installed distribution with its pin; other versions warn, saying if the patches accept them."""
    found = machine.version(name)
    if found is None:
        return Check(name, "fail", "not installed", expected, install)
    if found == pin:
        return Check(name, "ok", found, expected)
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion

    try:
        fits = "inside" if Requirement(requirement).specifier.contains(found, prereleases=True) else "outside"
    except InvalidVersion:
        fits = "outside"
    return Check(name, "warn", found, expected,
                 f"{found} is {fits} the range the patches accept ({requirement!r}); the table pairs {pin}: {install}")


def _check_python(machine: Machine) -> Check:
    found = ".".join(str(part) for part in machine.python_version)
    expected = versions.python_versions_text()
    if versions.is_supported_python(machine.python_version):
        return Check("python", "ok", found, expected)
    return Check("python", "warn", found, expected,
                 f"MindSpeed {versions.MINDSPEED_VERSION} supports Python {expected} only: use one of them "
                 f"for MindSpeed training")


def _check_mindspore(machine: Machine) -> Check:
    return _against_pin(machine, "mindspore", versions.MINDSPORE_VERSION, versions.MINDSPORE_VERSION,
                        versions.MINDSPORE_REQUIREMENT, versions.MINDSPORE_INSTALL)


def _check_msadapter(machine: Machine) -> Check:
    return _against_pin(machine, "msadapter", versions.MSADAPTER_VERSION,
                        f"{versions.MSADAPTER_VERSION} (table: {versions.MSADAPTER_BRANCH})",
                        versions.MSADAPTER_REQUIREMENT, versions.MSADAPTER_INSTALL)


def _probe_torch(machine: Machine) -> dict[str, str]:
    command = [machine.python, "-c", _PROBE, json.dumps(machine.search_path)]
    try:
        done = run_text(command, timeout=machine.timeout, env=machine.child_environ())
    except subprocess.TimeoutExpired:
        return {"error": f"'import msadapter; import torch' took more than {machine.timeout:g} s"}
    except OSError as exc:
        return {"error": f"could not start {machine.python}: {exc}"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(_PROBE_MARKER):
            answer: dict[str, str] = json.loads(line[len(_PROBE_MARKER):])
            return answer
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"the probe interpreter exited with {done.returncode}: {tail}"}


def _check_import_torch(machine: Machine) -> Check:
    expected = "torch is MSAdapter's after 'import msadapter'"
    probe = _probe_torch(machine)
    logger.debug("import torch probe: %s", probe)
    if "error" in probe:
        return Check("import torch", "fail", probe["error"], expected,
                     f"make 'python -c \"import msadapter, torch\"' work: {versions.MSADAPTER_INSTALL}, "
                     f"{versions.MINDSPORE_INSTALL}")
    package = os.path.dirname(probe.get("msadapter_file") or "")
    file = probe.get("file") or ""
    is_msadapter = probe.get("loader", "").startswith("msadapter") or bool(package and file.startswith(package))
    api = f"torch API {probe.get('api_version')}"
    if is_msadapter:
        return Check("import torch", "ok", f"MSAdapter's ({probe.get('loader')}), {api}", expected)
    return Check("import torch", "fail", f"{file or '?'} (loader {probe.get('loader')}), {api}", expected,
                 "another torch shadows MSAdapter's: remove it from this environment (see 'real torch') and "
                 f"pip install --force-reinstall --no-deps msadapter=={versions.MSADAPTER_VERSION}")


def _check_real_torch(machine: Machine) -> Check:
    # MSAdapter's wheel ships top-level torch/ files under its own dist-info, so a distribution
    # *named* torch (or torch-npu, torchvision) is always the real one.
    real = [f"{name} {version}" for name in _TORCH_DISTRIBUTIONS if (version := machine.version(name)) is not None]
    expected = "no real torch beside MSAdapter"
    has_msadapter = machine.version("msadapter") is not None
    if not real:
        return Check("real torch", "ok", "none", expected)
    found = ", ".join(real)
    if has_msadapter:
        names = " ".join(item.split()[0] for item in real)
        return Check("real torch", "fail", f"{found} beside msadapter", expected,
                     f"MSAdapter and PyTorch write the same torch/ files, so one overwrites the other: keep real "
                     f"PyTorch in another environment; here run pip uninstall -y {names}, then pip install "
                     f"--force-reinstall --no-deps msadapter=={versions.MSADAPTER_VERSION}")
    return Check("real torch", "warn", found, expected,
                 "fine for the PyTorch backend, but installing MSAdapter here would overwrite it: use a separate "
                 "environment for the MindSpore backend")


def _read_key(file: Path, key: str) -> str | None:
    try:
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        name, sep, value = line.partition("=")
        if sep and name.strip().lower() == key.lower():
            return value.strip()
    return None


def _cann_version(home: Path) -> tuple[str, Path] | None:
    """Return (version, file it came from) from a CANN toolkit directory, or None when none is found."""
    arch = f"{platform.machine()}-linux"
    infos = [home / arch / "ascend_toolkit_install.info", *sorted(home.glob("*-linux/ascend_toolkit_install.info"))]
    for info in infos:
        version = _read_key(info, "version")
        if version:
            return version, info
    # Older toolkits: toolkit_running_version=[<inner version>:<CANN version>] in version.cfg.
    running = _read_key(home / "version.cfg", "toolkit_running_version")
    if running:
        return running.strip("[]").rpartition(":")[2], home / "version.cfg"
    compiler = _read_key(home / "compiler" / "version.info", "Version")
    if compiler:
        return compiler, home / "compiler" / "version.info"
    return None


def _check_cann(machine: Machine) -> Check:
    expected = versions.CANN_VERSION
    variable = next((name for name in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME") if machine.environ.get(name)), None)
    if variable is None:
        return Check("cann", "warn", "ASCEND_HOME_PATH and ASCEND_TOOLKIT_HOME are not set", expected,
                     f"no CANN toolkit: {_CPU}; {_ON_ASCEND}, source <CANN install>/set_env.sh "
                     f"(e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh)")
    home = Path(machine.environ[variable])
    if not home.is_dir():
        return Check("cann", "fail", f"{variable}={home} does not exist", expected,
                     f"point {variable} at the CANN toolkit (source its set_env.sh) or unset it to use the CPU backend")
    found = _cann_version(home)
    if found is None:
        return Check("cann", "warn", f"{variable}={home}, no version file", expected,
                     f"no <arch>-linux/ascend_toolkit_install.info or version.cfg under {home}: reinstall "
                     f"CANN {expected} or check that {variable} points at the toolkit")
    version, source = found
    where = f"{version} ({source})"
    if version == expected:
        return Check("cann", "ok", where, expected)
    return Check("cann", "warn", where, expected,
                 f"MindSpore {versions.MINDSPORE_VERSION} is built for CANN {expected}: install it and source its "
                 "set_env.sh")


def npu_rows(output: str) -> list[tuple[str, str, str]]:
    """Return (NPU id, model, health) for each NPU row of an ``npu-smi info`` table."""
    rows = []
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2:
            continue
        head = cells[0].split()
        if len(head) == 2 and head[0].isdigit() and cells[1] and not cells[1][0].isdigit():
            rows.append((head[0], head[1], cells[1].split()[0]))
    return rows


def _check_npu(machine: Machine) -> Check:
    expected = "npu-smi info lists NPUs with Health OK"
    smi = shutil.which("npu-smi", path=machine.path)
    if smi is None:
        return Check("npu", "warn", "no npu-smi on PATH", expected,
                     f"no Ascend driver: {_CPU}; {_ON_ASCEND}, install the NPU driver and firmware")
    try:
        done = run_text([smi, "info"], timeout=min(machine.timeout, 30.0), env=machine.child_environ())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("npu", "fail", f"{smi} info: {exc}", expected, "check the NPU driver (npu-smi info must answer)")
    if done.returncode != 0:
        tail = ((done.stderr or done.stdout).strip().splitlines() or ["no output"])[-1]
        return Check("npu", "fail", f"{smi} info exited with {done.returncode}: {tail}", expected,
                     "the driver is installed but npu-smi fails: check the driver, firmware and device permissions")
    rows = npu_rows(done.stdout)
    if not rows:
        return Check("npu", "warn", f"{smi} info lists no NPU", expected,
                     f"no NPU visible: {_CPU}; check ASCEND_RT_VISIBLE_DEVICES and the container's devices")
    models = sorted({model for _, model, _ in rows})
    unhealthy = [f"NPU {npu}: {health}" for npu, _, health in rows if health != "OK"]
    found = f"{len(rows)} NPU(s): {', '.join(models)}"
    if unhealthy:
        return Check("npu", "warn", f"{found}; {', '.join(unhealthy)}", expected,
                     "npu-smi reports unhealthy NPUs: see 'npu-smi info' and the device logs")
    return Check("npu", "ok", found, expected)


def _check_megatron(machine: Machine) -> Check:
    expected = f"{versions.MEGATRON_CORE_VERSION} ({versions.MEGATRON_BRANCH})"
    if machine.version("megatron-core") is None:
        # MindSpeed-LLM copies Megatron-LM's megatron/ folder into its tree instead of installing it.
        spec = PathFinder.find_spec("megatron", machine.search_path if machine.search_path is not None else sys.path)
        if spec is not None and spec.submodule_search_locations:
            where = list(spec.submodule_search_locations)[0]
            return Check("megatron-core", "warn", f"megatron at {where}, no distribution metadata", expected,
                         f"a source checkout: make sure it is Megatron-LM {versions.MEGATRON_BRANCH}")
    return _against_pin(machine, "megatron-core", versions.MEGATRON_CORE_VERSION, expected,
                        versions.MEGATRON_CORE_REQUIREMENT, versions.MEGATRON_CORE_INSTALL)


def _check_msrun(machine: Machine) -> Check:
    expected = "msrun on PATH, next to the python its workers start"
    here = os.path.dirname(machine.python)
    msrun = shutil.which("msrun", path=machine.path)
    if msrun is None:
        return Check("msrun", "fail", "no msrun on PATH", expected,
                     f"msrun ships with MindSpore: put {here} first on PATH ({versions.MINDSPORE_INSTALL} if missing)")
    # msrun starts each worker with a bare `python`, resolved through PATH.
    python = shutil.which("python", path=machine.path)
    if python is None or os.path.realpath(os.path.dirname(python)) != os.path.realpath(here):
        return Check("msrun", "warn", f"{msrun}; workers would start {python or 'no python'}", expected,
                     f"msrun's workers run a bare 'python': put {here} first on PATH")
    return Check("msrun", "ok", msrun, expected)


def _check_framework(machine: Machine) -> Check:
    from mindspeed_ms.adaptation.framework import decide_framework
    from mindspeed_ms.adaptation.settings import Settings

    expected = "mindspore"
    try:  # the decision (the adaptation's one) a training script started here with these flags would get
        choice = decide_framework(machine.argv, Settings.from_environ(machine.environ))
    except FrameworkError as exc:
        return Check("ai-framework", "fail", str(exc), expected,
                     f"fix --ai-framework or {FRAMEWORK_ENV}: 'mindspore' or 'pytorch'")
    except SettingError as exc:  # the training script would stop on it too
        return Check("ai-framework", "fail", str(exc), expected, f"fix or unset {exc.variable}")
    framework = choice.name
    source = {"flag": "--ai-framework on the command line",
              "environment": f"{FRAMEWORK_ENV}={choice.name}",
              "default": f"default: no --ai-framework, {FRAMEWORK_ENV} unset"}[choice.source]
    found = f"{framework} ({source})"
    if framework == "mindspore":
        return Check("ai-framework", "ok", found, expected)
    if source.startswith("default"):
        return Check("ai-framework", "ok", found, expected,
                     "the launch line decides: give the training script --ai-framework mindspore "
                     "(mindspeed-ms convert-launch adds it)")
    return Check("ai-framework", "warn", found, expected,
                 f"{source} selects PyTorch: unset it or set {FRAMEWORK_ENV}=mindspore")


_CHECKS: dict[str, Callable[[Machine], Check]] = {
    "python": _check_python, "mindspore": _check_mindspore, "msadapter": _check_msadapter,
    "import torch": _check_import_torch, "real torch": _check_real_torch, "cann": _check_cann, "npu": _check_npu,
    "megatron-core": _check_megatron, "msrun": _check_msrun, "ai-framework": _check_framework,
}


def run_checks(environ: Mapping[str, str] | None = None, path: str | None = None, *,
               search_path: Sequence[str] | None = None, python: str | None = None,
               python_version: tuple[int, ...] | None = None, argv: Sequence[str] = (),
               only: Collection[str] | None = None, timeout: float = 120.0) -> list[Check]:
    """Check the machine against the version table; return one :class:`Check` per component.

    Args:
        environ: the environment (``ASCEND_HOME_PATH``, ``MINDSPEED_AI_FRAMEWORK``, ...); ``os.environ``
            when None. Child processes (the ``import torch`` probe, ``npu-smi``) run with it.
        path: the ``PATH`` to find ``npu-smi``, ``msrun`` and ``python`` on; ``environ["PATH"]`` when None.
        search_path: the module search path to find distributions and packages on; ``sys.path`` when
            None. The probe interpreter uses it too.
        python: the interpreter whose ``import msadapter; import torch`` is probed; ``sys.executable``
            when None.
        python_version: the version to check; this interpreter's when None.
        argv: training-script arguments for the ``--ai-framework`` check (by default only the
            environment decides, as for a script started without the flag).
        only: names from :data:`CHECK_NAMES` to run (all when None), in table order.
        timeout: seconds allowed for each child process.

    Returns:
        The checks, in the order of :data:`CHECK_NAMES`.

    Raises:
        ValueError: ``only`` names a check that does not exist.
    """
    if only is not None:
        unknown = sorted(set(only) - set(CHECK_NAMES))
        if unknown:
            raise ValueError(f"unknown doctor check(s) {', '.join(map(repr, unknown))}: choose from "
                             f"{', '.join(map(repr, CHECK_NAMES))}")
    machine = Machine(environ, path, search_path, python, python_version, argv, timeout)
    return [_CHECKS[name](machine) for name in CHECK_NAMES if only is None or name in only]
