"""Our code's share of the training step by sampling (py-spy), next to cProfile's (bench_train.py).

cProfile books its own cost of each Python call (~1-5 us) into that function's self time, and none into a C
function called from it: a thin Python wrapper around a MindSpore op looks several times dearer than it is. A
sampling profiler instead stops the process now and then and records where its main thread is: each sample is
one instant of the step, whatever the code is, so the fraction of samples in a class of code estimates the
fraction of the time spent there without weighting Python calls (its own cost, the stop, lands at random
instants; its error is statistical, reported as one standard error).

py-spy records every stack as ``frame;frame;...;leaf COUNT`` (``--format raw``), outermost first, each frame as
``function (location)``: a Python frame's location is ``file.py:line``, a native one's (``--native``) a shared
library (``libmindspore_core.so``, ``mindspore/_c_expression.cpython-311-x86_64-linux-gnu.so``) or a C source
line where it has debug information (``mindspeed_ms/engine/_passthrough.c:176``). Only samples with a frame
named :data:`MARKER` count: ``_train_worker.py`` (``BENCH_MARK_STEPS=1``) runs the iterations after the first 3
inside it, so setup and warm-up never enter. Each sample is classified by :func:`classify`.

py-spy is optional: without it the bench prints cProfile's measure only and says ``pip install py-spy``.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

#: the frame the worker runs the steady iterations in (benchmarks/_train_worker.py's mark_steps)
MARKER = "bench_steady_step"
INSTALL_HINT = "pip install py-spy"
#: sampling rate (per second). Each sample stops every thread of the process (ptrace) and unwinds its native
#: stack: ~10 ms with MindSpore's thread pools, more on a loaded machine. py-spy keeps a fixed schedule: after a
#: slow sample the next comes sooner in the process's own progress, and when it falls behind it samples again at
#: once, where the process still is, so the phases that are slow to sample (NumPy's multithreaded GEMM: all
#: threads running) are sampled too often (a synthetic split at 200/s: GEMM 64% of the samples, 24% of the time;
#: the mid model at 50/s, load 9-26: the host GEMM 86%). Low enough that a sample costs a small part of the
#: interval; the bench reports when py-spy said it fell behind.
RATE = 20
_BEHIND = re.compile(r"([0-9.]+)s behind in sampling")

OURS, HOST, MINDSPORE, ADAPTER, OTHER = ("mindspeed_ms (ours)", "host kernels (ours, NumPy/C arithmetic)",
                                         "MindSpore (its C++ runtime and kernels, its Python)", "MSAdapter's Python",
                                         "megatron-core, the example, Python's library")
CLASSES = (OURS, HOST, MINDSPORE, ADAPTER, OTHER)

#: our NumPy arithmetic over tensor memory (work MindSpore's kernels did before): "host kernels", as cProfile's
HOST_FILES = ("mindspeed_ms/compat/host_kernels.py", "mindspeed_ms/compat/host_arithmetic.py")
#: our C extensions doing arithmetic (compat/_host_rows, _host_gelu, _host_loops, _host_copies, _view_add); the others
#: are glue: ours (engine/_passthrough, engine/_identity, compat/_function_checks, and compat/_host_dispatch (the
#: host-memory lookups), compat/_host_bodies (the host Functions' bodies, which call the arithmetic through callables;
#: _host_linear before round 22: counted as host kernels before round 21, ~1.4% of the tiny step) and
#: compat/_host_wrappers (the wrappers' per-call tests)
HOST_NATIVE = re.compile(r"mindspeed_ms/compat/(_host_(rows|gelu|loops|copies)|_view_add)[.]")
#: natives that belong to whoever called them: the interpreter, the C and C++ runtimes, the loader
NEUTRAL = re.compile(r"(^|/)(libpython[\d.]+\.so|python[\d.]*$|libc\.so|libm\.so|libstdc\+\+|libgcc_s|"
                     r"libpthread|ld-linux|libdl\.so|librt\.so)|^\?$|^$")
#: NumPy's own libraries (its bundled OpenBLAS included): arithmetic of whoever called NumPy
NUMPY = re.compile(r"(^|/)(numpy/|_multiarray_umath|_umath_linalg|_pocketfft|libopenblas64_p|libgfortran|"
                   r"libquadmath|_generator|mtrand|bit_generator)")
_NATIVE_SOURCE = re.compile(r"\.(c|cc|cpp|cxx|h|hpp|rs|S):\d+$")
_FRAME = re.compile(r"^(?P<name>.*) \((?P<where>[^()]*)\)$")


def native(location: str) -> bool:
    """Whether a frame's location is native code (a library, or a C source line) rather than a Python file."""
    return (location.endswith(".so") or ".so." in location or bool(_NATIVE_SOURCE.search(location))
            or location in ("", "?"))


def _location(frame: str) -> str:
    match = _FRAME.match(frame)
    return match.group("where") if match else "?"


def _python_owner(location: str) -> str:
    path = location.rsplit(":", 1)[0]
    if "mindspeed_ms/" in path or path.startswith("mindspeed_ms"):
        return HOST if path.endswith(HOST_FILES) else OURS
    if path.startswith("mindspore/") or "/mindspore/" in path:
        return MINDSPORE
    if path.startswith(("msadapter/", "torch/", "torch_npu/")) or "/msadapter/" in path:
        return ADAPTER
    return OTHER


def classify(frames: list[str]) -> str:
    """The class of one sample, ``frames`` outermost first.

    The innermost native frame that is not neutral (the interpreter, libc, libstdc++, the loader) decides: one of
    our C extensions (host arithmetic: :data:`HOST`, a wrapper: :data:`OURS`); NumPy's libraries (the class of
    the Python code that called NumPy); anything else (MindSpore's libraries, and what they call: OpenBLAS,
    libgomp, oneDNN) :data:`MINDSPORE`, e.g. a wrapper of ours that handed a call on to a MindSpore op, or the
    main thread waiting in a MindSpore op for its kernel threads. Without one (Python code running, or the
    interpreter's own C functions it calls: attribute lookups, calls, allocation) the innermost Python frame
    decides, by its file: mindspeed_ms's (:data:`HOST` for compat/host_kernels.py and compat/host_arithmetic.py),
    MindSpore's, MSAdapter's (its ``torch``), else :data:`OTHER`.
    """
    locations = [_location(frame) for frame in frames]
    innermost_python = max((index for index, where in enumerate(locations) if not native(where)), default=-1)
    python_class = _python_owner(locations[innermost_python]) if innermost_python >= 0 else OTHER
    for where in reversed(locations[innermost_python + 1:]):
        if NEUTRAL.search(where):
            continue
        if "mindspeed_ms/" in where:
            return HOST if HOST_NATIVE.search(where) else OURS
        if NUMPY.search(where):
            return python_class
        return MINDSPORE
    return python_class


#: what one of our samples ("ours") was doing, by the frames below its innermost Python frame (:func:`own_kind`)
PYTHON, OUR_C, NUMPY_CALL, RUNTIME = ("our Python interpreting", "our C wrappers", "NumPy called from our files",
                                     "the interpreter's and C runtime's natives")
OWN_KINDS = (PYTHON, OUR_C, NUMPY_CALL, RUNTIME)


def own_kind(frames: list[str]) -> str:
    """What a sample :func:`classify` gives to :data:`OURS` was doing: no native frame below its innermost Python
    frame (the interpreter running our bytecode: :data:`PYTHON`), one of our C extensions below it (:data:`OUR_C`),
    NumPy's libraries (:data:`NUMPY_CALL`: an array's metadata, a copy, a small reduction from a file of ours that is
    not a host-kernel file), else only neutral natives (:data:`RUNTIME`: the interpreter's C, libc, the loader)."""
    locations = [_location(frame) for frame in frames]
    innermost_python = max((index for index, where in enumerate(locations) if not native(where)), default=-1)
    below = locations[innermost_python + 1:]
    if not below:
        return PYTHON
    if any("mindspeed_ms/" in where for where in below):
        return OUR_C
    if any(NUMPY.search(where) for where in below):
        return NUMPY_CALL
    return RUNTIME


@dataclass
class Share:
    """The steady samples of one run, by class; the innermost Python frames of ours, by samples; our samples by
    what they were doing (:func:`own_kind`)."""

    samples: Counter[str] = field(default_factory=Counter)
    own_frames: Counter[str] = field(default_factory=Counter)
    own_kinds: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.samples.values())

    def fraction(self, *classes: str) -> tuple[float, float]:
        """The fraction of the samples in ``classes`` and its standard error (binomial)."""
        if not self.total:
            return float("nan"), float("nan")
        p = sum(self.samples[name] for name in classes) / self.total
        return p, math.sqrt(p * (1 - p) / self.total)


def read_raw(text: str, marker: str = MARKER) -> Share:
    """Classify the samples of py-spy's raw output ``text`` that have a frame named ``marker``."""
    share = Share()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        start = next((index for index, frame in enumerate(frames) if frame.partition(" (")[0].endswith(marker)),
                     None)
        if start is None:
            continue
        frames = frames[start + 1:]
        kind = classify(frames)
        share.samples[kind] += int(count)
        if kind in (OURS, HOST):
            python = [frame for frame in frames if not native(_location(frame))]
            where = re.sub(r":\d+\)$", ")", python[-1]) if python else "?"
            share.own_frames[f"{where} [{'host' if kind == HOST else 'ours'}]"] += int(count)
        if kind == OURS:
            share.own_kinds[own_kind(frames)] += int(count)
    return share


def behind(output: str) -> float:
    """The most seconds py-spy said it fell behind its sampling schedule in ``output`` (0: never)."""
    return max((float(seconds) for seconds in _BEHIND.findall(output)), default=0.0)


def find_py_spy() -> str | None:
    """py-spy's executable: on PATH or next to this interpreter (a venv's bin/), else None."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if os.access(beside, os.X_OK) else None)


def record_command(py_spy: str, output: Path, command: list[str], rate: int = RATE) -> list[str]:
    """``command`` under py-spy: native frames, idle samples too (a thread waiting is time of the step),
    msrun's workers (``--subprocesses``), raw stacks to ``output``."""
    return [py_spy, "record", "--native", "--idle", "--subprocesses", "-r", str(rate), "-f", "raw",
            "-o", str(output), "--", *command]


def can_attach(py_spy: str, scratch: Path) -> str | None:
    """None when py-spy can sample a child process here, else why not (ptrace refused: a container without
    CAP_SYS_PTRACE, kernel.yama.ptrace_scope=3)."""
    # a child that lives a while (py-spy can lose the race with one that exits at once: it panics), three tries
    said: list[str] = []
    for _ in range(3):
        probe = subprocess.run(record_command(py_spy, scratch / "probe.txt",
                                              [sys.executable, "-c", "import time; time.sleep(0.5)"]),
                               capture_output=True, text=True, timeout=120)
        if probe.returncode == 0:
            return None
        said = [line for line in (probe.stderr + probe.stdout).strip().splitlines() if line.strip()]
        refusal = [line for line in said if "rror" in line or "ermission" in line]
        said = refusal or said or [f"py-spy exited {probe.returncode}"]
    return said[0].strip()
