"""Run a training script on the PyTorch reference (torchrun) and on MindSpore (msrun), then compare.

The reference runs first, under an interpreter with real PyTorch (a separate virtual environment:
MSAdapter cannot live beside real torch); it dumps its initial parameters and batches. The
candidate then runs the same script and arguments under msrun, loads those parameters by name,
uses those batches, and dumps what the reference dumped.

Both runs go through ``mindspeed-ms run``'s bootstrap (:mod:`mindspeed_ms.bootstrap.launch`): the script
needs no ``import mindspeed_ms.adaptor`` and no ``--ai-framework`` flag; each side's framework is
set by ``MINDSPEED_AI_FRAMEWORK`` (nothing is added to the script's arguments, which a strict parser
such as Megatron's would reject). Both start in the caller's directory, so relative paths in the
arguments mean what they mean to the caller.

In ``--work-dir`` the tool writes only what it lists in a manifest (``.mindspeed-ms-parity.json``) and,
on a later run, removes only what that manifest says it created; anything else in the way is a
set-up error.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

from mindspeed_ms.bootstrap.launch import bootstrap_environment
from mindspeed_ms.parity.capture import PARITY_DIR_ENV, PARITY_LOAD_ENV, PARITY_ROLE_ENV
from mindspeed_ms.parity.compare import ParityReport, Tolerances, compare_dumps
from mindspeed_ms.parity.context_parallel import PARITY_CP_ENV
from mindspeed_ms.parity.errors import ParityNoStepError, ParityRunError, ParitySetupError
from mindspeed_ms.parity.processes import RUN_TOKEN_ENV, run_with_timeout

__all__ = ["REFERENCE_PYTHON_ENV", "MANIFEST", "ParityRunError", "ParitySetupError", "ParityNoStepError",
           "find_reference_python", "run_parity", "without_framework_flag"]

REFERENCE_PYTHON_ENV = "MINDSPEED_MS_REFERENCE_PYTHON"
#: What the tool created in a work folder (JSON: ``{"created": [names]}``).
MANIFEST = ".mindspeed-ms-parity.json"
_OUTPUTS = ("reference", "candidate", "candidate_logs", "reference.log", "candidate.log")
_FLAG = "--ai-framework"


def find_reference_python(explicit: str | None = None) -> str:
    """Return the reference interpreter: ``explicit``, else ``$MINDSPEED_MS_REFERENCE_PYTHON``.

    Raises:
        ParitySetupError: none given, or the path is not an executable file.
    """
    path = explicit or os.environ.get(REFERENCE_PYTHON_ENV)
    if not path:
        raise ParitySetupError(
            f"parity needs a Python with real PyTorch: pass --reference-python PATH or set {REFERENCE_PYTHON_ENV} "
            f"(e.g. a venv made with: pip install torch==2.13.0 'numpy<2' einops packaging wrapt && "
            f"pip install --no-deps megatron-core==0.12.1)")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise ParitySetupError(f"the reference interpreter {path!r} is not an executable file")
    # absolute, but not resolved: a venv's python is a symlink whose own location is what selects the venv
    return os.path.abspath(path)


def without_framework_flag(args: Sequence[str]) -> list[str]:
    """Return ``args`` without ``--ai-framework NAME`` / ``--ai-framework=NAME`` (each side's framework is set
    by the environment; a flag would override it on both sides)."""
    kept: list[str] = []
    index = 0
    while index < len(args):
        token = args[index]
        if token == "--":
            kept.extend(args[index:])
            break
        if token == _FLAG:
            index += 2
            continue
        if not token.startswith(_FLAG + "="):
            kept.append(token)
        index += 1
    return kept


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _environment(role: str, dump: Path, load: Path | None, path_first: str | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MINDSPEED_MS_PARITY")}
    env = bootstrap_environment(env, framework="pytorch" if role == "reference" else "mindspore")
    env[PARITY_DIR_ENV] = str(dump)
    env[PARITY_ROLE_ENV] = role
    env[RUN_TOKEN_ENV] = uuid.uuid4().hex
    if load is not None:
        env[PARITY_LOAD_ENV] = str(load)
    env.setdefault("GLOG_v", "3")
    if path_first:
        env["PATH"] = os.pathsep.join(filter(None, [path_first, env.get("PATH")]))
    return env


def _claim_work_dir(work: Path) -> None:
    """Make ``work`` ready for a run: remove what an earlier run of this tool created there, refuse anything else.

    Raises:
        ParitySetupError: ``work`` holds one of the tool's output names that no manifest of the tool claims.
    """
    manifest = work / MANIFEST
    owned: set[str] = set()
    if manifest.is_file():
        try:
            owned = set(json.loads(manifest.read_text(encoding="utf-8")).get("created", ()))
        except (ValueError, AttributeError, OSError):
            owned = set()
    present = [name for name in _OUTPUTS if os.path.lexists(work / name)]
    foreign = [name for name in present if name not in owned]
    if foreign:
        raise ParitySetupError(
            f"--work-dir {work} already holds {', '.join(foreign)}, which mindspeed-ms parity did not create (no "
            f"{MANIFEST} there claims them): nothing was deleted; choose another --work-dir (an empty or new "
            f"folder) or move them away")
    for name in present:
        path = work / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    work.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"created": list(_OUTPUTS)}) + "\n", encoding="utf-8")


def _check_reference_recorded(reference: Path, log: Path) -> None:
    """Raise :class:`ParityNoStepError` unless every rank of the reference recorded at least one step."""
    ranks = sorted(reference.glob("rank*")) if reference.is_dir() else []
    hint = f" (the reference's output: {log})"
    if not ranks:
        raise ParityNoStepError(
            "parity: the reference run finished without calling a model: the capture saw no torch.nn.Module "
            "holding parameters called from outside any module, so there is nothing to compare. parity compares "
            "a training loop: a model forward, then backward() of a scalar loss" + hint, missing="model")
    for rank in ranks:
        steps = rank / "steps.jsonl"
        if not steps.is_file() or not steps.read_text(encoding="utf-8").strip():
            raise ParityNoStepError(
                f"parity: the reference run called its model but never ran a backward of a scalar loss on "
                f"{rank.name}: no loss.backward(), torch.autograd.backward(loss) or megatron's custom_backward "
                f"after a forward, so there are no steps, losses or gradients to compare" + hint,
                missing="backward")


def _failure(role: str, returncode: int, command: list[str], log: Path) -> ParityRunError:
    text = log.read_text(encoding="utf-8", errors="replace")
    for worker_log in sorted((log.parent / f"{role}_logs").glob("worker_*.log")):
        text += f"\n--- {worker_log.name} ---\n" + worker_log.read_text(encoding="utf-8", errors="replace")
    return ParityRunError(role, returncode, command, text[-4000:])


def run_parity(script: str | os.PathLike[str], script_args: Sequence[str] = (), *, reference_python: str | None = None,
               nproc: int = 1, work_dir: str | os.PathLike[str], tolerances: Tolerances | None = None,
               timeout: float = 900.0, candidate_script: str | os.PathLike[str] | None = None,
               candidate_args: Sequence[str] | None = None, candidate_context_parallel: int = 1) -> ParityReport:
    """Run ``script`` on both backends from the same parameters and batches and compare them.

    Args:
        script: the training script, unchanged (the bootstrap imports the adaptor for it).
        script_args: its arguments, the same for both runs (an ``--ai-framework`` among them is dropped: each
            side's framework is set by ``MINDSPEED_AI_FRAMEWORK``).
        reference_python: the interpreter with real PyTorch (see :func:`find_reference_python`).
        nproc: processes per run (torchrun ``--nproc-per-node``, msrun ``--worker_num``).
        work_dir: where the dumps and logs go (``reference/``, ``candidate/``, ``*.log``); the tool removes
            there only what an earlier run of it created.
        tolerances: what counts as equal.
        timeout: seconds each run may take; past it every process of that run is ended.
        candidate_script: another script for the MindSpore side (default: ``script``), e.g. MindSpeed-LLM's
            ``pretrain_gpt.py`` against Megatron-LM's: the same model (parameter names and shapes must match), fed
            the reference's batches; a module output recorded by one side only is noted, not counted.
        candidate_args: its arguments (default: ``script_args``).
        candidate_context_parallel: the candidate runs context parallel this size (its own flags must say so) on
            ``nproc * candidate_context_parallel`` workers, against the reference's ``nproc`` without it: batches,
            losses, gradients and module outputs are compared as :mod:`mindspeed_ms.parity.context_parallel` says.

    Returns:
        The :class:`~mindspeed_ms.parity.compare.ParityReport`.

    Raises:
        ParitySetupError: the reference interpreter, msrun or the script is missing, or ``work_dir`` holds files
            the tool did not create.
        ParityNoStepError: the reference recorded no step (no model called, or no backward).
        ParityRunError: a run failed or timed out (its output is in the error).
        ValueError: ``nproc`` or ``candidate_context_parallel`` is not positive.
    """
    if nproc < 1:
        raise ValueError(f"nproc must be at least 1, got {nproc}")
    if candidate_context_parallel < 1:
        raise ValueError(f"candidate_context_parallel must be at least 1, got {candidate_context_parallel}")
    workers = nproc * candidate_context_parallel
    script_path = Path(script).resolve()
    if not script_path.is_file():
        raise ParitySetupError(f"the training script {str(script)!r} does not exist")
    candidate_path = script_path if candidate_script is None else Path(candidate_script).resolve()
    if not candidate_path.is_file():
        raise ParitySetupError(f"the candidate script {str(candidate_script)!r} does not exist")
    python = find_reference_python(reference_python)
    bin_dir = str(Path(sys.executable).parent)
    msrun = shutil.which("msrun", path=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))
    if msrun is None:
        raise ParitySetupError("msrun (it ships with MindSpore) is not on PATH nor beside this interpreter")
    work = Path(work_dir).resolve()
    _claim_work_dir(work)
    reference, candidate = work / "reference", work / "candidate"
    args = without_framework_flag([str(arg) for arg in script_args])
    theirs = args if candidate_args is None else without_framework_flag([str(arg) for arg in candidate_args])
    caller = os.getcwd()
    reference_cmd = [python, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
                     f"--master-port={_free_port()}", str(script_path), *args]
    candidate_cmd = [msrun, f"--worker_num={workers}", f"--local_worker_num={workers}", f"--master_port={_free_port()}",
                     "--join=True", "--cluster_time_out=120", f"--log_dir={work / 'candidate_logs'}",
                     str(candidate_path), *theirs]
    reference_env = _environment("reference", reference, None)
    returncode = run_with_timeout(reference_cmd, env=reference_env, cwd=caller, log=work / "reference.log",
                                  timeout=timeout)
    if returncode != 0:
        raise _failure("reference", returncode, reference_cmd, work / "reference.log")
    _check_reference_recorded(reference, work / "reference.log")
    candidate_env = _environment("candidate", candidate, reference, bin_dir)
    if candidate_context_parallel > 1:
        candidate_env[PARITY_CP_ENV] = str(candidate_context_parallel)
    returncode = run_with_timeout(candidate_cmd, env=candidate_env, cwd=caller, log=work / "candidate.log",
                                  timeout=timeout)
    if returncode != 0:
        raise _failure("candidate", returncode, candidate_cmd, work / "candidate.log")
    return compare_dumps(reference, candidate, tolerances,
                         commands={"reference": reference_cmd, "candidate": candidate_cmd},
                         modules_may_differ=candidate_script is not None,
                         context_parallel=candidate_context_parallel)
