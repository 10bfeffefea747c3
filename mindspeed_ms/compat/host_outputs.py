"""New float32 tensors in MindSpore's own memory, with a NumPy array over it for the host paths to write into.

The host paths (:mod:`.gelu`, :mod:`.bias_add`, :mod:`.host_layer_norm`, :mod:`.host_softmax`,
:mod:`.fast_masked_fill`) compute into tensors they return to autograd. Wrapping a NumPy
array (``Tensor.from_numpy``) would hand MindSpore memory it does not own: when a gradient made that way is
accumulated into a leaf's ``.grad``, MindSpore frees it through its own allocator and corrupts the heap
(``corrupted size vs. prev_size``, tests/test_compat_host_outputs.py). MindSpore's ``Empty`` op on the CPU takes
memory from MindSpore's pool (no copy, no page faults of fresh NumPy memory). It is called at its C entry
(``pyboost_empty(primitive, [shape, type id, device, False])``, what ``mint.empty`` and ``Empty.__call__`` call after
their Python layers: 6 us a call against mint.empty's 12 us alone, 20 against 32-44 us within a training step of the
tiny example, ~30 calls a step); where this MindSpore lacks that entry, ``mint.empty``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.host_memory import executor_sync, host_array, tensor_reads

try:
    from . import _host_dispatch as _dispatch
except ImportError:  # optional (setup.py): the Python functions run
    _dispatch = None  # type: ignore[assignment]
from mindspeed_ms.compat.host_memory import HOST_DISPATCH_ABI

if _dispatch is not None and getattr(_dispatch, "ABI", None) != HOST_DISPATCH_ABI:
    _dispatch = None  # type: ignore[assignment]

__all__ = ["new_empty", "new_float32", "new_float32_function", "owned_float32", "python_new_float32"]

#: The arrays :func:`new_float32` handed out, by ``(address, shape)``: a new tensor's memory is float32 and
#: contiguous, so these two tell its array (the array of :func:`host_array`, which reads the tensor's shape, dtype
#: and strides too). MindSpore's pool hands the same blocks back every step (~70 new tensors a step at the mid size).
_ARRAYS: dict[tuple[Any, ...], Any] = {}
_MAX_ARRAYS = 1024

#: ``(mint.empty of float32 on the CPU, the executor's own sync, MindSpore's address reader)`` once MindSpore is
#: imported
_HOT: list[tuple[Any, Any, Any]] = []


@functools.lru_cache(maxsize=1)
def _empty() -> Any:
    """MindSpore's Empty op for float32 on the CPU: ``(op, primitive, type id, device)`` to call as
    ``op(primitive, [shape, type id, device, False])`` (its C entry, see the module's docstring), or ``mint.empty``
    with those keywords where MindSpore has no such entry."""
    import mindspore
    from mindspore import mint

    try:
        from mindspore._c_expression import pyboost_empty
        from mindspore.ops._utils.arg_handler import dtype_to_type_id, str_to_enum
        from mindspore.ops.auto_generate.gen_ops_prim import empty_op
    except ImportError:
        return functools.partial(mint.empty, dtype=mindspore.float32, device="CPU")
    return (pyboost_empty, empty_op, dtype_to_type_id("Empty", "dtype", mindspore.float32),
            str_to_enum("Empty", "device", "CPU"))


@functools.lru_cache(maxsize=16)
def _type_id(dtype: Any) -> Any:
    """MindSpore's type id of ``dtype``, as Empty's Python layer converts it."""
    from mindspore.ops._utils.arg_handler import dtype_to_type_id

    return dtype_to_type_id("Empty", "dtype", dtype)


def new_empty(shape: tuple[int, ...], dtype: Any) -> Any:
    """Return a new uninitialised CPU tensor of ``shape`` and MindSpore ``dtype`` from MindSpore's pool: Empty's C entry
    where this MindSpore has it (see the module's docstring), else ``mint.empty`` (the host index operands: int32,
    int64, bool tensors written on the host)."""
    empty = _empty()
    if type(empty) is tuple:
        op, primitive, _, device = empty
        return op(primitive, [shape, _type_id(dtype), device, False])
    from mindspore import mint

    return mint.empty(shape, dtype=dtype, device="CPU")


def _call_empty(empty: Any, shape: Any) -> Any:
    """A new float32 CPU tensor of ``shape`` from :func:`_empty`'s op."""
    if type(empty) is tuple:
        op, primitive, type_id, device = empty
        return op(primitive, [shape, type_id, device, False])
    return empty(shape)


def _hot() -> tuple[Any, Any, Any]:
    _HOT.append((_empty(), executor_sync(), tensor_reads()[0]))
    return _HOT[0]


def python_new_float32(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """Return ``(tensor, array)``: a new contiguous float32 tensor of ``shape`` and a NumPy array over its memory.

    :data:`new_float32` is this function, or the same calls and lookup in one C call (:func:`new_float32_function`).
    """
    empty, sync, address = _HOT[0] if _HOT else _hot()
    tensor = _call_empty(empty, shape)
    if type(shape) is not tuple:  # a list, a torch.Size: the general reads
        return tensor, host_array(tensor)
    sync()  # the tensor has its memory once the queued kernels ran
    key = (address(tensor), shape)
    try:
        return tensor, _ARRAYS[key]
    except KeyError:
        return _keep(tensor, key)


def _keep(tensor: Any, key: tuple[Any, ...]) -> tuple[Any, Any]:
    """``(tensor, its array)`` for a new ``tensor`` whose key (see :data:`_ARRAYS`) is not kept yet; keep it."""
    array = host_array(tensor, sync=False)
    if len(_ARRAYS) >= _MAX_ARRAYS:
        _ARRAYS.clear()
    _ARRAYS[key] = array
    return tensor, array


#: :func:`python_new_float32` in one C call (``_host_dispatch.NewFloat32``: the same calls in the same order, the
#: same key and arrays; a miss or a shape that is not a tuple goes to the Python functions), or None where not built
_COMPILED: Any = None if _dispatch is None else _dispatch.NewFloat32(_hot, _ARRAYS, _keep, python_new_float32)


def new_float32_function(compiled: bool = True) -> Callable[[tuple[int, ...]], tuple[Any, Any]]:
    """Return :func:`python_new_float32`, or the same in one C call where the extension is built and ``compiled``."""
    if compiled and _COMPILED is not None:
        return _COMPILED  # type: ignore[no-any-return]
    return python_new_float32


#: ``new_float32(shape) -> (tensor, array)``: :func:`python_new_float32`, in C where built
new_float32: Callable[[tuple[int, ...]], tuple[Any, Any]] = new_float32_function()


def owned_float32(array: Any) -> Any:
    """Return a new float32 tensor in MindSpore's memory holding a copy of ``array`` (float32, any layout)."""
    import numpy as np

    tensor, memory = new_float32(tuple(array.shape))
    np.copyto(memory, array)
    return tensor
