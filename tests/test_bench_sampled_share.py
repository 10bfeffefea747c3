"""benchmarks/_sampled_share.py: the sampled share of our code (py-spy) classifies samples as it says, and a
known split (a Python loop of ours, NumPy arithmetic of a host-kernel file, a MindSpore op) is measured right."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _sampled():
    spec = importlib.util.spec_from_file_location("bench_sampled_share_under_test", BENCHMARKS / "_sampled_share.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


s = _sampled()
OURS_PY = "run (mindspeed_ms/compat/function_grads.py:251)"
HOST_PY = "matmul (mindspeed_ms/compat/host_kernels.py:140)"
MEGATRON_PY = "forward (core/tensor_parallel/layers.py:422)"
PASSTHROUGH = "guard_vectorcall (mindspeed_ms/engine/_passthrough.c:176)"
MS_NATIVE = ["0x7f94329a179f (mindspore/_c_expression.cpython-311-x86_64-linux-gnu.so)",
             "mindspore::ThreadPool::ParallelLaunch (libmindspore_core.so)", "sched_yield (libc.so.6)"]
NUMPY = "PyArray_NewCopy (numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so)"
LIBPYTHON = "PyObject_GetAttr (libpython3.11.so.1.0)"


@pytest.mark.parametrize(("frames", "expected"), [
    ([MEGATRON_PY, OURS_PY], s.OURS),  # our Python running
    ([MEGATRON_PY, OURS_PY, LIBPYTHON, "malloc (libc.so.6)"], s.OURS),  # the interpreter's C for our code
    ([OURS_PY, PASSTHROUGH], s.OURS),  # our C wrapper itself
    ([OURS_PY, PASSTHROUGH, LIBPYTHON], s.OURS),
    ([MEGATRON_PY, PASSTHROUGH, *MS_NATIVE], s.MINDSPORE),  # a wrapper handing on to a MindSpore op
    ([OURS_PY, *MS_NATIVE], s.MINDSPORE),  # our code calling an op: the op's time is MindSpore's
    ([OURS_PY, NUMPY, "dgemm_kernel (numpy.libs/libopenblas64_p-r0-0cf96a72.3.23.dev.so)"], s.OURS),
    ([HOST_PY, NUMPY], s.HOST),  # NumPy arithmetic of a host-kernel file
    ([OURS_PY, "adam_bucket (mindspeed_ms/compat/_host_loops.c:88)"], s.HOST),  # our C loops
    ([OURS_PY, "0x7f01 (mindspeed_ms/compat/_host_gelu.cpython-311-x86_64-linux-gnu.so)"], s.HOST),
    ([OURS_PY, "mlp_backward (mindspeed_ms/compat/_host_bodies.c:612)", LIBPYTHON], s.OURS),  # a body's glue in C
    ([OURS_PY, "new_float32_call (mindspeed_ms/compat/_host_dispatch.c:259)"], s.OURS),  # a host-memory lookup
    ([OURS_PY, "mlp_forward (mindspeed_ms/compat/_host_bodies.c:540)",
      "0x7f01 (mindspeed_ms/compat/_host_gelu.cpython-311-x86_64-linux-gnu.so)"], s.HOST),  # the kernel it calls
    ([OURS_PY, "Primitive.__call__ (mindspore/ops/primitive.py:397)"], s.MINDSPORE),  # MindSpore's Python
    ([OURS_PY, "Module._call_impl (msadapter/nn/modules/module.py:748)"], s.ADAPTER),
    ([OURS_PY, MEGATRON_PY, LIBPYTHON], s.OTHER),
    ([MEGATRON_PY, *MS_NATIVE, "gomp_barrier_wait (libgomp.so.1)"], s.MINDSPORE),
])
def test_a_sample_is_classified_by_its_innermost_owned_frame(frames: list[str], expected: str) -> None:
    assert s.classify(frames) == expected


def test_only_samples_under_the_marker_count() -> None:
    prefix = "process 1:\"python w.py\";<module> (_train_worker.py:259);main (pretrain_gpt.py:309)"
    steady = f"{prefix};mark_steps.<locals>.marked.<locals>.bench_steady_step (_train_worker.py:115)"
    warmup = f"{prefix};mark_steps.<locals>.marked.<locals>.bench_warmup_step (_train_worker.py:112)"
    raw = "\n".join([f"{steady};{OURS_PY} 3", f"{steady};{MEGATRON_PY};{';'.join(MS_NATIVE)} 5",
                     f"{warmup};{OURS_PY} 40", f"{prefix};{OURS_PY} 7", f"{steady};{HOST_PY};{NUMPY} 2"])
    share = s.read_raw(raw)
    assert share.total == 10
    assert (share.samples[s.OURS], share.samples[s.MINDSPORE], share.samples[s.HOST]) == (3, 5, 2)
    assert share.fraction(s.OURS)[0] == pytest.approx(0.3)
    assert share.own_frames == {"run (mindspeed_ms/compat/function_grads.py) [ours]": 3,
                                "matmul (mindspeed_ms/compat/host_kernels.py) [host]": 2}
    assert share.own_kinds == {s.PYTHON: 3}


@pytest.mark.parametrize(("frames", "expected"), [
    ([MEGATRON_PY, OURS_PY], s.PYTHON),  # no native frame below our Python frame: the interpreter on our bytecode
    ([OURS_PY, PASSTHROUGH], s.OUR_C),
    ([OURS_PY, PASSTHROUGH, LIBPYTHON], s.OUR_C),
    ([OURS_PY, NUMPY], s.NUMPY_CALL),
    ([MEGATRON_PY, OURS_PY, LIBPYTHON, "malloc (libc.so.6)"], s.RUNTIME),
])
def test_our_samples_are_told_apart_by_what_runs_below_our_python(frames: list[str], expected: str) -> None:
    assert s.classify(frames) == s.OURS
    assert s.own_kind(frames) == expected


PROGRAM = """
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import mindspore
from mindspore import ops
from mindspeed_ms.own import own_loop
from mindspeed_ms.compat.host_kernels import host_work

spent = {"ours": 0.0, "host": 0.0, "mindspore": 0.0}
a = ops.ones((384, 384), mindspore.float32)
host_a = np.ones((160, 160))
ops.matmul(a, a).asnumpy()

def bench_steady_step():
    start = time.perf_counter()
    own_loop(120000)
    middle = time.perf_counter()
    host_work(host_a)
    later = time.perf_counter()
    for _ in range(3):
        ops.matmul(a, a).asnumpy()
    end = time.perf_counter()
    spent["ours"] += middle - start
    spent["host"] += later - middle
    spent["mindspore"] += end - later

begin = time.perf_counter()
while time.perf_counter() - begin < 3.0:
    bench_steady_step()
total = sum(spent.values())
print(" ".join(f"{name}={value / total:.4f}" for name, value in spent.items()))
"""


def test_a_known_split_is_measured_within_its_sampling_error(tmp_path: Path) -> None:
    """Our Python loop, NumPy work in a host-kernel file and MindSpore matmuls (about 30/20/50%), each timed by
    the program: the sampled fraction of each class matches the timed one within 10 points and 2 standard errors
    (the samples are not independent, and the machine is shared: a misclassified part is off by 20 points or
    more). OpenBLAS on one thread: py-spy stops every thread for each sample."""
    py_spy = s.find_py_spy()
    assert py_spy is not None, f"py-spy is in the test extra: {s.INSTALL_HINT}"
    (tmp_path / "mindspeed_ms" / "compat").mkdir(parents=True)
    for package in ("mindspeed_ms", "mindspeed_ms/compat"):  # packages: they shadow the real one
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "mindspeed_ms" / "own.py").write_text(textwrap.dedent("""
        def own_loop(n):
            total = 0
            for i in range(n):
                total += i * i % 7
            return total
        """))
    (tmp_path / "mindspeed_ms" / "compat" / "host_kernels.py").write_text(textwrap.dedent("""
        import numpy as np

        def host_work(a):
            for _ in range(8):
                a = np.tanh(a @ a * 1e-3)
            return a
        """))
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    raw = tmp_path / "raw.txt"
    run = subprocess.run(s.record_command(py_spy, raw, [sys.executable, str(program), str(tmp_path)], rate=50),
                         capture_output=True, text=True, timeout=120, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    said = run.stdout + run.stderr
    if run.returncode != 0 and any(word in said.lower() for word in ("ptrace", "permission denied",
                                                                     "operation not permitted")):
        pytest.skip(f"py-spy cannot attach to a child process here (ptrace): {said.strip()[-300:]}")
    assert run.returncode == 0, said[-2000:]
    timed = dict(item.split("=") for item in run.stdout.split() if "=" in item)
    share = s.read_raw(raw.read_text())
    assert share.total >= 60, said[-2000:]
    for name, kind in (("ours", s.OURS), ("host", s.HOST), ("mindspore", s.MINDSPORE)):
        fraction, error = share.fraction(kind)
        assert abs(fraction - float(timed[name])) <= 2 * error + 0.1, (name, fraction, timed, share.samples)
    assert share.samples[s.ADAPTER] == 0
