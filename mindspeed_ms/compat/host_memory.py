"""NumPy arrays over the host memory of MindSpore CPU tensors: reads and writes that reach the tensor.

On MindSpore's CPU backend a tensor's memory is host memory (``data_ptr()``), and every view of a
storage shares it. Writing there is how the in-place replacements reach a view's base
(:mod:`mindspeed_ms.compat.inplace`), how DDP buckets are scaled without a kernel, and how the flat
Adam updates parameters in place (:mod:`mindspeed_ms.compat.flat_adam`).

The array is built from ``__array_interface__`` (address, shape, byte strides): a ctypes buffer would
make NumPy parse a PEP 3118 format string on every call (~0.1-0.3 ms each, ~100 calls per step).
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["host_array", "host_memory_reason", "synchronize"]


@functools.lru_cache(maxsize=1)
def host_memory_reason() -> str | None:
    """Return why tensor memory is not host memory here, or None when it is (MindSpore on the CPU)."""
    import mindspore

    target = mindspore.get_context("device_target")
    return None if target == "CPU" else f"tensors live on {target}, not in host memory"


def synchronize() -> None:
    """Wait for every queued kernel, so host memory holds what the tensors hold."""
    from mindspore.common.api import _pynative_executor

    # mindspore.runtime.synchronize() is a no-op (and logs an error) on CPU; the PyNative executor's sync
    # waits for the kernels queued when launch is asynchronous (MINDSPEED_MS_LAUNCH_BLOCKING=0).
    _pynative_executor.sync()


class _Memory:
    """What ``numpy.asarray`` needs to wrap foreign memory without copying it."""

    __slots__ = ("__array_interface__",)

    def __init__(self, address: int, shape: tuple[int, ...], strides: tuple[int, ...], typestr: str) -> None:
        self.__array_interface__ = {"data": (address, False), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


@functools.lru_cache(maxsize=32)
def _numpy_dtype(dtype: Any) -> Any:
    import mindspore
    import numpy as np

    return np.dtype(mindspore.dtype_to_nptype(dtype))


def host_array(tensor: Any, *, sync: bool = True, dtype: Any = None, flat: bool = False) -> Any:
    """Return a NumPy array over ``tensor``'s host memory, at its offset and strides (writes land in it).

    Args:
        tensor: a MindSpore/MSAdapter tensor on the CPU backend (a view or not).
        sync: wait for queued kernels first (pass False right after a call that already waited).
        dtype: the NumPy dtype of the elements (default: the tensor's).
        flat: a 1-D array of all the elements (``tensor`` must be contiguous).

    Returns:
        An array of ``tensor``'s shape (or 1-D) sharing its memory.
    """
    import numpy as np

    if sync:
        synchronize()
    element = _numpy_dtype(tensor.dtype) if dtype is None else np.dtype(dtype)
    itemsize = element.itemsize
    # NumPy's own kinds have a type string; others (ml_dtypes' bfloat16) are read as same-size integers.
    typestr = element.str if element.kind in "biufc" else f"<u{itemsize}"
    if flat:
        shape: tuple[int, ...] = (int(tensor.numel()),)
        strides: tuple[int, ...] = (itemsize,)
    else:
        shape = tuple(int(n) for n in tensor.shape)
        strides = tuple(int(s) * itemsize for s in tensor.stride())
    array = np.asarray(_Memory(int(tensor.data_ptr()), shape, strides, typestr))
    return array if array.dtype == element else array.view(element)
