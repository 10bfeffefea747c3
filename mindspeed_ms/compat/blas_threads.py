"""The thread count of the OpenBLAS NumPy multiplies with, set at run time for the host GEMM (:mod:`.fast_matmul`).

OpenBLAS splits a GEMM between its threads (NumPy's wheels: up to 2 on this 2-core machine), the tiny model's
products too (128x64 by 64x256: ~2 million multiply-adds, a few tens of microseconds on one core). There the split
saves little, and where another process holds a core, the calling thread waits for the second one to be scheduled:
in a MindSpore training process on the loaded 2-core machine, ``torch.matmul(x, weight.t())`` of the tiny size took
0.11-0.23 ms (min/median) on one thread and 0.11-5.8 ms on two. The mid size's products run on all
(:attr:`OpenBLASThreads.largest`).
OpenBLAS's result does not depend on its thread count (each output element is summed by one thread in the same
order; tests/test_compat_fast_matmul.py checks it): only the speed changes.

The setting is OpenBLAS's, for the whole process (like ``OPENBLAS_NUM_THREADS``, which, where set, still sets the
largest count): other NumPy products of the process run on the count last chosen (by the host GEMM, or by
:mod:`.host_attention`, which runs its batched products on one thread).
:func:`openblas_threads` finds the library NumPy loaded (``/proc/self/maps``, as threadpoolctl does); where there is
none (another BLAS, another system), nothing is set and NumPy multiplies as it always does.

msrun (MindSpore 2.7.1) starts its workers with ``OMP_NUM_THREADS=1`` where the variable is unset, and OpenBLAS
takes its thread count from it: every host GEMM of a training process ran on one thread, the mid size's too (a
[512x512]@[512x2048] product: 12.3 ms on one thread, 5.8 on two, 3.9 for PyTorch's MKL on two). PyTorch's
torchrun sets ``OMP_NUM_THREADS=1`` only when it starts several processes on the node. :func:`process_threads`
does the same for msrun's workers: msrun's only worker on the node (``MS_WORKER_NUM=1``) gets the CPUs it may run
on; several workers keep one each. ``OPENBLAS_NUM_THREADS``, where set, is OpenBLAS's count and is kept as it is.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any, Callable

__all__ = ["ONE_THREAD_PRODUCT", "OpenBLASThreads", "openblas_threads", "process_threads"]

#: products of fewer multiply-adds (``m * k * n``) run on one OpenBLAS thread (every product of the tiny model:
#: at most 2.1 million; Megatron-LM's tiny llama's output layer at vocabulary 4096: 16.8 million; the mid size's are
#: 33.5 million and more). Round 24 raised it from 2**23: that llama loop's median iteration 44.4-59.8 ms with its
#: output layer's GEMMs on two threads, 41.7-54.6 on one (4 alternating pairs on the 2-core machine, the other core
#: busy with megatron's DataLoader workers; 3 pairs faster, 1 equal)
ONE_THREAD_PRODUCT = 1 << 25

#: the symbol suffixes of OpenBLAS's builds: NumPy's 64-bit-integer wheels, the plain library, Debian's 64-bit one
_SUFFIXES = ("64_", "", "_64")


class OpenBLASThreads:
    """OpenBLAS's thread count, set only when it changes (one ctypes call).

    Attributes:
        path: the library's file.
        largest: the most it runs on: OpenBLAS's count at start (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` or
            the cores), or the process's CPUs in msrun's only worker (:func:`process_threads`).
        current: the count last set.
    """

    def __init__(self, path: str, setter: Callable[[int], Any], largest: int, current: int | None = None) -> None:
        self.path = path
        self._setter = setter
        self.largest = max(1, largest)
        self.current = self.largest if current is None else max(1, current)

    def use(self, count: int) -> None:
        """Run OpenBLAS's next calls on ``count`` threads (at most :attr:`largest`)."""
        count = min(max(1, count), self.largest)
        if count != self.current:
            self._setter(count)
            self.current = count


def process_threads(openblas_count: int, environ: Any = None) -> int:
    """Return the most threads this process's OpenBLAS should use: ``openblas_count`` (what OpenBLAS started with),
    or, in msrun's only worker on the node (``MS_ROLE=MS_WORKER``, ``MS_WORKER_NUM=1``) without
    ``OPENBLAS_NUM_THREADS``, the CPUs the process may run on (msrun's ``OMP_NUM_THREADS=1`` set aside, as torchrun
    does for a single process).

    Args:
        openblas_count: ``openblas_get_num_threads()`` at start.
        environ: the environment to read (``os.environ`` when None).
    """
    environ = os.environ if environ is None else environ
    if (environ.get("OPENBLAS_NUM_THREADS") or environ.get("MS_ROLE") != "MS_WORKER"
            or environ.get("MS_WORKER_NUM", "").strip() != "1"):
        return openblas_count
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(openblas_count, cpus)


@functools.lru_cache(maxsize=1)
def openblas_threads() -> OpenBLASThreads | None:
    """Return the control of the OpenBLAS this process loaded (NumPy's), or None where there is none."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.rsplit("/", 1)[-1].lower()
                            and line.split()[-1].startswith("/")})
    except OSError:
        return None
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for suffix in _SUFFIXES:
            setter = getattr(library, f"openblas_set_num_threads{suffix}", None)
            getter = getattr(library, f"openblas_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype, getter.restype = [ctypes.c_int], None, ctypes.c_int
                started = int(getter())
                return OpenBLASThreads(path, setter, process_threads(started), started)
    return None
