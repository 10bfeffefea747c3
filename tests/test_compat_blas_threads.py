"""mindspeed_ms.compat.blas_threads: the OpenBLAS NumPy loaded is found and its thread count set only on change; the
host GEMM (host_kernels.matmul) runs small products on one thread, large ones on all, with the same bits, and
computes the same where no OpenBLAS is found."""

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np
import pytest
from _helpers import ROOT, result_line, run_python, subprocess_env

from mindspeed_ms.compat import blas_threads, host_kernels


def _library_count(control: blas_threads.OpenBLASThreads) -> int:
    """The count the library itself reports (not the control's bookkeeping)."""
    library = ctypes.CDLL(control.path)
    for suffix in ("64_", "", "_64"):
        getter = getattr(library, f"openblas_get_num_threads{suffix}", None)
        if getter is not None:
            getter.restype = ctypes.c_int
            return int(getter())
    raise AssertionError(f"no openblas_get_num_threads in {control.path}")


@pytest.fixture()
def control():
    found = blas_threads.openblas_threads()
    assert found is not None, "NumPy's wheels bundle OpenBLAS: it must be found in /proc/self/maps"
    before = found.current
    yield found
    found.use(before)


def test_numpys_openblas_is_found_and_its_count_set(control: blas_threads.OpenBLASThreads) -> None:
    assert "openblas" in control.path.lower()
    assert control.largest >= 1
    control.use(1)
    assert control.current == 1
    assert _library_count(control) == 1
    control.use(control.largest + 5)  # clamped to the count OpenBLAS started with
    assert control.current == control.largest == _library_count(control)


def test_the_count_is_set_only_when_it_changes() -> None:
    calls: list[int] = []
    control = blas_threads.OpenBLASThreads("/nowhere/libopenblas.so", calls.append, 2)
    control.use(2)
    control.use(1)
    control.use(1)
    control.use(0)  # at least one
    control.use(2)
    assert calls == [1, 2]


def test_small_products_run_on_one_thread_and_large_ones_on_all_with_the_same_bits(
        control: blas_threads.OpenBLASThreads) -> None:
    rng = np.random.default_rng(0)
    tiny = rng.standard_normal((32, 4, 64), dtype=np.float32), rng.standard_normal((256, 64), dtype=np.float32).T
    mid = rng.standard_normal((512, 512), dtype=np.float32), rng.standard_normal((2048, 512), dtype=np.float32).T
    for (left, right), expected_count in ((tiny, 1), (mid, control.largest), (tiny, 1)):
        out = np.empty((*left.shape[:-1], right.shape[1]), np.float32)
        host_kernels.matmul(left, right, out)
        assert control.current == expected_count == _library_count(control)
        assert np.allclose(out, np.einsum("...k,kn->...n", left.astype(np.float64), right.astype(np.float64)),
                           rtol=1e-4, atol=1e-4)
    left, right = mid
    results: dict[int, list[np.ndarray]] = {}
    for count in (1, control.largest, 1, control.largest):
        control.use(count)
        results.setdefault(count, []).append(np.matmul(left, right))
    for repeated in results.values():  # a thread count gives the same bits every time (no load-dependent choice)
        assert np.array_equal(*repeated)
    # across thread counts: the same bits on the AVX-512 machine these were first measured on; on an AVX2-only AMD
    # EPYC, OpenBLAS's two-thread product differs in the last bits of ~5% of the elements (5e-5 absolute here):
    # float32 rounding of the same sums, not another product
    assert np.allclose(results[1][0], results[control.largest][0], rtol=1e-5, atol=1e-4)


def test_without_openblas_the_product_is_numpys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blas_threads, "openblas_threads", lambda: None)
    rng = np.random.default_rng(1)
    left, right = rng.standard_normal((64, 48), dtype=np.float32), rng.standard_normal((48, 32), dtype=np.float32)
    out = np.empty((64, 32), np.float32)
    host_kernels.matmul(left, right, out)
    assert np.array_equal(out, np.matmul(left, right))


def test_msruns_only_worker_sets_msruns_one_thread_aside_and_everything_else_keeps_openblass_count() -> None:
    cpus = len(os.sched_getaffinity(0))
    only = {"MS_ROLE": "MS_WORKER", "MS_WORKER_NUM": "1", "OMP_NUM_THREADS": "1"}
    assert blas_threads.process_threads(1, only) == max(1, cpus)
    assert blas_threads.process_threads(cpus + 3, only) == cpus + 3  # never fewer than OpenBLAS started with
    assert blas_threads.process_threads(1, {**only, "MS_WORKER_NUM": "2"}) == 1  # several workers: one each
    assert blas_threads.process_threads(1, {**only, "OPENBLAS_NUM_THREADS": "1"}) == 1  # OpenBLAS's own setting
    assert blas_threads.process_threads(1, {**only, "MS_ROLE": "MS_SCHED"}) == 1
    assert blas_threads.process_threads(1, {"OMP_NUM_THREADS": "1"}) == 1  # not under msrun


_WORKER_SCRIPT = '''
import ctypes, json
import numpy as np
from mindspeed_ms.compat import blas_threads, host_kernels

control = blas_threads.openblas_threads()
library = ctypes.CDLL(control.path)
getter = next(getattr(library, f"openblas_get_num_threads{s}") for s in ("64_", "", "_64")
              if hasattr(library, f"openblas_get_num_threads{s}"))
started = getter()
rng = np.random.default_rng(0)
left, right = rng.standard_normal((512, 512), dtype=np.float32), rng.standard_normal((512, 2048), dtype=np.float32)
out = np.empty((512, 2048), np.float32)
host_kernels.matmul(left, right, out)
print("RESULT " + json.dumps({"started": started, "largest": control.largest, "after_large_product": getter(),
                              "exact": bool(np.array_equal(out, np.matmul(left, right)))}), flush=True)
'''


def test_in_msruns_only_worker_a_large_product_runs_on_the_processs_cpus() -> None:
    """msrun's workers start with OMP_NUM_THREADS=1, which OpenBLAS reads: the large host GEMMs ran on one thread."""
    env = subprocess_env(drop=("MINDSPEED_", "OPENBLAS_"), PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
                         MS_ROLE="MS_WORKER", MS_WORKER_NUM="1")
    result = result_line(run_python(sys.executable, "-c", _WORKER_SCRIPT, env=env))
    assert result["started"] == 1
    assert result["largest"] == len(os.sched_getaffinity(0))
    # OpenBLAS caps the count at what it was built for (NumPy's wheel here: 2)
    assert min(2, result["largest"]) <= result["after_large_product"] <= result["largest"]
    assert result["exact"]
