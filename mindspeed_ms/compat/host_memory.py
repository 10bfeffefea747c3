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
import math
from typing import Any, Callable

try:
    from . import _host_dispatch as _dispatch
except ImportError:  # optional (setup.py): the Python functions run
    _dispatch = None  # type: ignore[assignment]

#: The C module's interface this file is written for (``HOST_DISPATCH_ABI`` in ``_host_dispatch.c``): an older build
#: in a tree built in place is not used
HOST_DISPATCH_ABI = 2
if _dispatch is not None and getattr(_dispatch, "ABI", None) != HOST_DISPATCH_ABI:
    _dispatch = None  # type: ignore[assignment]

__all__ = ["HOST_DISPATCH_ABI", "contiguity_read", "executor", "executor_sync", "has_compiled_dispatch", "host_array",
           "host_array_function", "host_memory_reason", "kept_array", "python_host_array", "synchronize",
           "tensor_reads"]


@functools.lru_cache(maxsize=1)
def host_memory_reason() -> str | None:
    """Return why tensor memory is not host memory here, or None when it is (MindSpore on the CPU)."""
    import mindspore

    target = mindspore.get_context("device_target")
    return None if target == "CPU" else f"tensors live on {target}, not in host memory"


@functools.lru_cache(maxsize=1)
def executor() -> Any:
    """MindSpore's PyNative executor (``executor().sync()`` is :func:`synchronize` without our frame around it)."""
    from mindspore.common.api import _pynative_executor

    return _pynative_executor


@functools.lru_cache(maxsize=1)
def executor_sync() -> Callable[[], Any]:
    """The executor's own ``sync`` (MindSpore's C++ function ``executor().sync()`` calls, without that Python frame):
    what the hot paths call before reading host memory (a profile books it to MindSpore, as ``mindspore._c_expression
    .sync``)."""
    inner = getattr(executor(), "_executor", None)
    sync = getattr(inner, "sync", None)
    return sync if callable(sync) else executor().sync  # type: ignore[no-any-return]


def synchronize() -> None:
    """Wait for every queued kernel, so host memory holds what the tensors hold."""
    # mindspore.runtime.synchronize() is a no-op (and logs an error) on CPU; the PyNative executor's sync
    # waits for the kernels queued when launch is asynchronous (MINDSPEED_MS_LAUNCH_BLOCKING=0).
    executor().sync()


class _Memory:
    """What ``numpy.asarray`` needs to wrap foreign memory without copying it."""

    __slots__ = ("__array_interface__",)

    def __init__(self, address: int, shape: tuple[int, ...], strides: tuple[int, ...], typestr: str) -> None:
        self.__array_interface__ = {"data": (address, False), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


@functools.lru_cache(maxsize=32)
def _element(dtype: Any) -> tuple[Any, str, bool]:
    """(NumPy dtype, the type string to read it with, whether the array must be viewed as that dtype)."""
    import numpy as np

    element = np.dtype(dtype)
    # NumPy's own kinds have a type string; others (ml_dtypes' bfloat16) are read as same-size integers.
    if element.kind in "biufc":
        return element, element.str, False
    return element, f"<u{element.itemsize}", True


@functools.lru_cache(maxsize=32)
def _tensor_element(dtype: Any) -> tuple[Any, str, bool]:
    import mindspore

    return _element(mindspore.dtype_to_nptype(dtype))


def _shape(tensor: Any) -> tuple[int, ...]:
    # MindSpore's own shape tuple: MSAdapter's ``shape`` builds a torch.Size on every read (~5 us)
    shape = getattr(tensor, "_shape", None)
    return tuple(shape) if shape is not None else tuple(int(n) for n in tensor.shape)


@functools.lru_cache(maxsize=1)
def tensor_reads() -> tuple[Callable[[Any], int], Callable[[Any], Any]]:
    """MindSpore's own readers of a tensor's address and strides: ``(data_ptr, stride)``.

    They are what ``Tensor.data_ptr()`` and ``Tensor.stride()`` call, without the two Python layers
    (MSAdapter's and MindSpore's) in between: the hot paths read them for tens of tensors a step.
    """
    from mindspore._c_expression import TensorPy

    return TensorPy._data_ptr, TensorPy.stride


@functools.lru_cache(maxsize=1)
def contiguity_read() -> Callable[[Any], bool]:
    """MindSpore's own ``is_contiguous`` reader: what ``Tensor.is_contiguous()`` calls for the default layout,
    without our ``memory_format`` wrapper and MindSpore's Python method in between (two frames; ~40 calls a step of
    our own host paths' checks)."""
    from mindspore._c_expression import TensorPy

    return TensorPy.is_contiguous  # type: ignore[no-any-return]


#: The arrays :func:`host_array` handed out, by ``(address, shape, strides or None when flat, id of the tensor's
#: dtype or None, the NumPy dtype asked for or None)``, shape and strides as tuples of MindSpore's. An array only
#: describes memory (it owns none), so it is right for any live tensor with that key. The same tensors come
#: back every step (DDP's buckets, parameters and gradients), and building an array costs a few microseconds.
#: The key holds the dtype's id, not the dtype: a MindSpore dtype hashes through pybind11 (~10 times an int's
#: hash, twice per lookup of DDP's add); :data:`_DTYPES` keeps every dtype of a key alive, so an id in a key
#: names that one dtype for the life of the process.
_ARRAYS: dict[tuple[Any, ...], Any] = {}
_DTYPES: dict[int, Any] = {}
_MAX_ARRAYS = 1024

#: ``kept_array(key)``: the array :func:`host_array` keeps for ``key`` (as above: ``id(tensor._dtype)``), or None.
#: The dict's own ``get``: hot paths look their arrays up without a Python call.
kept_array: Callable[[tuple[Any, ...]], Any] = _ARRAYS.get


#: ``(executor_sync(), MindSpore's address reader, its stride reader)`` once MindSpore is imported: the hot path
#: reads them from a list (no call of the cached functions above, no ``sync`` lookup on the executor per call).
_HOT: list[tuple[Any, Any, Any]] = []


def _hot() -> tuple[Any, Any, Any]:
    _HOT.append((executor_sync(), *tensor_reads()))
    return _HOT[0]


def python_host_array(tensor: Any, *, sync: bool = True, dtype: Any = None, flat: bool = False) -> Any:
    """Return a NumPy array over ``tensor``'s host memory, at its offset and strides (writes land in it).

    :data:`host_array` is this function, or the same reads and lookup in one C call (:func:`host_array_function`).

    Args:
        tensor: a MindSpore/MSAdapter tensor on the CPU backend (a view or not).
        sync: wait for queued kernels first (pass False right after a call that already waited).
        dtype: the NumPy dtype of the elements (default: the tensor's).
        flat: a 1-D array of all the elements (``tensor`` must be contiguous).

    Returns:
        An array of ``tensor``'s shape (or 1-D) sharing its memory. Callers must not change the array's
        own attributes (shape, flags): arrays over the same memory, shape and strides are shared.
    """
    # ~150 calls a step at the mid size: MindSpore's own attributes read directly (no getattr call), the kept
    # array found by subscription (no dict method call); a missing attribute takes the general reads
    synced, address, stride = _HOT[0] if _HOT else _hot()
    if sync:
        synced()
    try:
        raw = tensor._shape
    except AttributeError:
        raw = None
    shape: tuple[int, ...] = (raw if type(raw) is tuple else tuple(raw)) if raw is not None else _shape(tensor)
    tensor_dtype = None
    if dtype is None:
        try:
            tensor_dtype = tensor._dtype
        except AttributeError:
            tensor_dtype = None
        if not tensor_dtype:
            tensor_dtype = tensor.dtype
    key = (address(tensor), shape, None if flat else tuple(stride(tensor)),
           None if tensor_dtype is None else id(tensor_dtype), dtype)
    try:
        return _ARRAYS[key]
    except KeyError:
        return _keep(key, tensor_dtype, dtype)


def _keep(key: tuple[Any, ...], tensor_dtype: Any, dtype: Any) -> Any:
    """Build the array of ``key`` (see :data:`_ARRAYS`) and keep it."""
    array = _build(key[0], key[1], key[2], tensor_dtype, dtype)
    if tensor_dtype is not None:
        _DTYPES.setdefault(id(tensor_dtype), tensor_dtype)  # before the key is kept (see _ARRAYS)
    if len(_ARRAYS) >= _MAX_ARRAYS:
        _ARRAYS.clear()
    _ARRAYS[key] = array
    return array


#: :func:`python_host_array` in one C call (``_host_dispatch.HostArray``: the same reads in the same order, the same
#: key and arrays; a miss, or anything unusual, goes to the Python functions), or None where it is not built
_COMPILED_HOST_ARRAY: Any = (None if _dispatch is None
                             else _dispatch.HostArray(_hot, _ARRAYS, _keep, python_host_array))


def host_array_function(compiled: bool = True) -> Callable[..., Any]:
    """Return :func:`python_host_array`, or the same in one C call where the extension is built and ``compiled``."""
    if compiled and _COMPILED_HOST_ARRAY is not None:
        return _COMPILED_HOST_ARRAY  # type: ignore[no-any-return]
    return python_host_array


def has_compiled_dispatch() -> bool:
    """Whether the C extension of :func:`host_array_function` (and of ``host_outputs.new_float32``) is built."""
    return _dispatch is not None


#: ``host_array(tensor, *, sync=True, dtype=None, flat=False)``: :func:`python_host_array`, in C where built
host_array: Callable[..., Any] = host_array_function()


def _build(address: int, shape: tuple[int, ...], strides: tuple[int, ...] | None, tensor_dtype: Any,
           dtype: Any) -> Any:
    """The array over ``address`` (``strides`` None: flat), of the tensor's dtype or of NumPy's ``dtype``."""
    import numpy as np

    element, typestr, other_kind = _tensor_element(tensor_dtype) if dtype is None else _element(dtype)
    itemsize = element.itemsize
    if strides is None:
        shape, byte_strides = (math.prod(shape),), (itemsize,)
    else:
        byte_strides = tuple([s * itemsize for s in strides])
    array = np.asarray(_Memory(address, shape, byte_strides, typestr))
    return array.view(element) if other_kind else array
