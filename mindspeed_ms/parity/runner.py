"""Run a training script on the PyTorch reference (torchrun) and on MindSpore (msrun), then compare.

The reference runs first, under an interpreter with real PyTorch (a separate virtual environment:
MSAdapter cannot live beside real torch); it dumps its initial parameters and batches. The
candidate then runs the same script and arguments under msrun with ``--ai-framework mindspore``,
loads those parameters by name, uses those batches, and dumps what the reference dumped.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from mindspeed_ms.errors import AdaptationError
from mindspeed_ms.parity.capture import PARITY_DIR_ENV, PARITY_LOAD_ENV, PARITY_ROLE_ENV
from mindspeed_ms.parity.compare import ParityReport, Tolerances, compare_dumps

__all__ = ["REFERENCE_PYTHON_ENV", "ParityRunError", "ParitySetupError", "find_reference_python", "run_parity"]

REFERENCE_PYTHON_ENV = "MINDSPEED_MS_REFERENCE_PYTHON"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding mindspeed_ms/


class ParitySetupError(AdaptationError, FileNotFoundError):
    """Something a parity run needs is missing (the reference interpreter, msrun, the script)."""


class ParityRunError(AdaptationError, RuntimeError):
    """One of the two runs failed.

    Attributes:
        role: ``"reference"`` or ``"candidate"``.
        returncode: its exit status.
        output: the tail of what it printed.
    """

    def __init__(self, role: str, returncode: int, command: Sequence[str], output: str) -> None:
        self.role, self.returncode, self.output = role, returncode, output
        super().__init__(f"parity: the {role} run exited with status {returncode}: {' '.join(command)}\n"
                         f"--- last output ---\n{output}")


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
    # absolute (the runs start in the work folder), but not resolved: a venv's python is a symlink whose
    # own location is what selects the venv
    return os.path.abspath(path)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _environment(role: str, dump: Path, load: Path | None, path_first: str | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("MINDSPEED_MS_PARITY") and key != "MINDSPEED_AI_FRAMEWORK"}
    env[PARITY_DIR_ENV] = str(dump)
    env[PARITY_ROLE_ENV] = role
    if load is not None:
        env[PARITY_LOAD_ENV] = str(load)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
    env.setdefault("GLOG_v", "3")
    if path_first:
        env["PATH"] = os.pathsep.join(filter(None, [path_first, env.get("PATH")]))
    return env


def _run(role: str, command: list[str], env: dict[str, str], cwd: Path, timeout: float, log: Path) -> None:
    with open(log, "w", encoding="utf-8", errors="replace") as stream:
        try:
            done = subprocess.run(command, env=env, cwd=str(cwd), stdout=stream, stderr=subprocess.STDOUT,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            returncode = 124
        else:
            returncode = done.returncode
    if returncode != 0:
        text = log.read_text(encoding="utf-8", errors="replace")
        for worker_log in sorted((log.parent / f"{role}_logs").glob("worker_*.log")):
            text += f"\n--- {worker_log.name} ---\n" + worker_log.read_text(encoding="utf-8", errors="replace")
        raise ParityRunError(role, returncode, command, text[-4000:])


def run_parity(script: str | os.PathLike[str], script_args: Sequence[str] = (), *, reference_python: str | None = None,
               nproc: int = 1, work_dir: str | os.PathLike[str], tolerances: Tolerances | None = None,
               timeout: float = 900.0) -> ParityReport:
    """Run ``script`` on both backends from the same parameters and batches and compare them.

    Args:
        script: the training script (it must import ``mindspeed_ms.adaptor`` first, and accept
            ``--ai-framework``).
        script_args: its arguments, the same for both runs.
        reference_python: the interpreter with real PyTorch (see :func:`find_reference_python`).
        nproc: processes per run (torchrun ``--nproc-per-node``, msrun ``--worker_num``).
        work_dir: where the dumps and logs go (``reference/``, ``candidate/``, ``*.log``).
        tolerances: what counts as equal.
        timeout: seconds each run may take.

    Returns:
        The :class:`~mindspeed_ms.parity.compare.ParityReport`.

    Raises:
        ParitySetupError: the reference interpreter, msrun or the script is missing.
        ParityRunError: a run failed (its output is in the error).
        ValueError: ``nproc`` is not positive.
    """
    if nproc < 1:
        raise ValueError(f"nproc must be at least 1, got {nproc}")
    script_path = Path(script).resolve()
    if not script_path.is_file():
        raise ParitySetupError(f"the training script {str(script)!r} does not exist")
    python = find_reference_python(reference_python)
    bin_dir = str(Path(sys.executable).parent)
    msrun = shutil.which("msrun", path=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))
    if msrun is None:
        raise ParitySetupError("msrun (it ships with MindSpore) is not on PATH nor beside this interpreter")
    work = Path(work_dir).resolve()
    reference, candidate = work / "reference", work / "candidate"
    for folder in (reference, candidate, work / "candidate_logs"):
        shutil.rmtree(folder, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    args = [str(arg) for arg in script_args]
    reference_cmd = [python, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
                     f"--master-port={_free_port()}", str(script_path), *args]
    candidate_cmd = [msrun, f"--worker_num={nproc}", f"--local_worker_num={nproc}", f"--master_port={_free_port()}",
                     "--join=True", "--cluster_time_out=120", f"--log_dir={work / 'candidate_logs'}",
                     str(script_path), *args, "--ai-framework", "mindspore"]
    _run("reference", reference_cmd, _environment("reference", reference, None), work, timeout,
         work / "reference.log")
    _run("candidate", candidate_cmd, _environment("candidate", candidate, reference, bin_dir), work, timeout,
         work / "candidate.log")
    return compare_dumps(reference, candidate, tolerances,
                         commands={"reference": reference_cmd, "candidate": candidate_cmd})
