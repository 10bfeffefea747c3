"""Small helpers shared by test modules (importable because pytest puts tests/ on sys.path).

Anything two test files would otherwise each write lives here: names and files for throwaway modules, the PyTorch
reference interpreter, subprocess environments and results, msrun command lines and their logs, free ports.
"""

from __future__ import annotations

import json
import os
import pkgutil
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
"""The checkout these tests belong to (put on a subprocess's PYTHONPATH so it imports this tree)."""

BIN = Path(sys.executable).parent
"""This interpreter's bin folder: where msrun and the mindspeed-ms entry point of the test environment are."""

FAKES = ROOT / "tests" / "fakes"
"""Stand-ins shaped like MindSpeed, MindSpeed-LLM and Megatron-LM's training code (see fakes/README.md)."""

EXAMPLE = ROOT / "examples" / "pretrain_gpt.py"
"""The example training script the end-to-end tests launch."""

LAYOUTS = ROOT / "tests" / "example_workers" / "layouts.py"
"""Runs the example's main() for several argument lists, one after the other, in one launch (one start)."""


def unique(prefix: str) -> str:
    """Return ``prefix`` with a random suffix: a module name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write ``{relative path: source}`` under ``root`` (sources are dedented)."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def builtin_providers() -> list[str]:
    """Return the names of the built-in patch modules (``mindspeed_ms/patches/<name>.py``), sorted."""
    import mindspeed_ms.patches

    return sorted(info.name for info in pkgutil.iter_modules(mindspeed_ms.patches.__path__)
                  if not info.name.startswith("_"))


def reference_python() -> str:
    """Return the PyTorch reference interpreter (``$MINDSPEED_MS_REFERENCE_PYTHON``, else ``.venv-ref``).

    Fails the calling test (it is not skipped: CI builds it) when there is none.
    """
    import pytest

    path = os.environ.get("MINDSPEED_MS_REFERENCE_PYTHON") or str(ROOT / ".venv-ref" / "bin" / "python")
    if not os.path.exists(path):
        pytest.fail(f"no PyTorch reference interpreter at {path}: build it with scripts/make_reference_venv.sh "
                    f"(as .ci/run does) or set MINDSPEED_MS_REFERENCE_PYTHON")
    return path


def is_running(pid: int) -> bool:
    """Tell whether process ``pid`` runs (a zombie, ended but not reaped where nothing reaps orphans, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now (for a launcher's master port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def subprocess_env(*, drop: tuple[str, ...] = (), bin_first: bool = False, **extra: str) -> dict[str, str]:
    """Return this process's environment for a child: MindSpore's C++ log quiet (``GLOG_v=3``), then ``extra``.

    Args:
        drop: prefixes of variable names to leave out (``"MINDSPEED_"``: no setting of the parent leaks in).
        bin_first: put this interpreter's bin folder first on PATH, so that ``msrun`` is the test environment's.
        extra: variables to set last.
    """
    env = {key: value for key, value in os.environ.items() if not (drop and key.startswith(drop))}
    env["GLOG_v"] = "3"
    if bin_first:
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def result_line(text: str, tag: str = "RESULT ") -> Any:
    """Return the JSON after ``tag`` on the first line of ``text`` that starts with it (a worker's result)."""
    line = next(line for line in text.splitlines() if line.startswith(tag))
    return json.loads(line[len(tag):])


def json_lines(text: str) -> list[Any]:
    """Return every line of ``text`` that is a JSON object, decoded (a worker's cases, one a line)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def run_python(python: str, *argv: str, env: dict[str, str] | None = None, timeout: float = 600,
               cwd: Path | None = None) -> str:
    """Run ``python *argv``; fail the test with the end of its output unless it exits 0; return its stdout."""
    done = subprocess.run([python, *argv], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=None if cwd is None else str(cwd))
    assert done.returncode == 0, f"{python} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def msrun_command(script: Path | str, *args: str, workers: int, log_dir: Path, port: int | None = None) -> list[str]:
    """Return the msrun command line that runs ``script *args`` on ``workers`` local CPU workers and waits for them."""
    return ["msrun", f"--worker_num={workers}", f"--local_worker_num={workers}",
            f"--master_port={free_port() if port is None else port}", f"--log_dir={log_dir}", "--join=True",
            "--cluster_time_out=120", str(script), *args]


def layout_output(text: str, name: str) -> str:
    """Return rank 0's output for the run ``name`` of a ``LAYOUTS`` launch (``text``: its output or rank 0's log).

    '' when that run did not finish (it did not start, or it failed: the launch's logs say why).
    """
    begin, end = f"=== layout {name}\n", f"=== layout {name} finished\n"
    if begin not in text or end not in text.split(begin, 1)[1]:
        return ""
    return text.split(begin, 1)[1].split(end, 1)[0]


def worker_logs(log_dir: Path, pattern: str = "worker_*.log", tail: int = 4000) -> str:
    """Return the last ``tail`` characters of each log in ``log_dir``, each under a ``--- name`` line."""
    return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-tail:]}"
                     for path in sorted(log_dir.glob(pattern)))


def run_reference(script: str, inputs: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Run ``script`` under the PyTorch reference interpreter on ``inputs``; return the arrays it saved.

    The script reads the arrays from the ``.npz`` file named by ``sys.argv[1]`` and saves its results to the one
    named by ``sys.argv[2]`` (``numpy.load`` / ``numpy.savez``).
    """
    import numpy as np

    given, taken = folder / "reference_inputs.npz", folder / "reference_outputs.npz"
    np.savez(given, **inputs)
    run_python(reference_python(), "-c", textwrap.dedent(script), str(given), str(taken),
               env=subprocess_env(drop=("MINDSPEED_", "PYTHONPATH")))
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def counting_prelude(module: str, function: str) -> str:
    """Code that imports the adaptor, then counts the calls of ``mindspeed_ms.compat.<module>.<function>`` in a list
    ``CALLS`` (one element) of the script it starts: whether a host path ran, seen from a MindSpore interpreter."""
    return (f"import mindspeed_ms.adaptor\nfrom mindspeed_ms.compat import {module}\nCALLS = [0]\n"
            f"_counted_function = {module}.{function}\n"
            f"def _counted(*args):\n    CALLS[0] += 1\n    return _counted_function(*args)\n"
            f"{module}.{function} = _counted")
