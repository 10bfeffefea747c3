"""New float32 tensors in MindSpore's own memory, with a NumPy array over it for the host paths to write into.

The host paths (:mod:`.gelu`, :mod:`.bias_add`, :mod:`.host_layer_norm`, :mod:`.host_softmax`,
:mod:`.fast_masked_fill`) compute into tensors they return to autograd. Wrapping a NumPy
array (``Tensor.from_numpy``) would hand MindSpore memory it does not own: when a gradient made that way is
accumulated into a leaf's ``.grad``, MindSpore frees it through its own allocator and corrupts the heap
(``corrupted size vs. prev_size``, tests/test_compat_host_outputs.py). ``mint.empty`` on the CPU takes memory
from MindSpore's pool (~50 us, no copy, no page faults of fresh NumPy memory).
"""

from __future__ import annotations

import functools
from typing import Any

from mindspeed_ms.compat.host_memory import executor, host_array, tensor_reads

__all__ = ["new_float32", "owned_float32"]

#: The arrays :func:`new_float32` handed out, by ``(address, shape)``: a new tensor's memory is float32 and
#: contiguous, so these two tell its array (the array of :func:`host_array`, which reads the tensor's shape, dtype
#: and strides too). MindSpore's pool hands the same blocks back every step (~70 new tensors a step at the mid size).
_ARRAYS: dict[tuple[Any, ...], Any] = {}
_MAX_ARRAYS = 1024

#: ``(mint.empty of float32 on the CPU, executor().sync, MindSpore's address reader)`` once MindSpore is imported
_HOT: list[tuple[Any, Any, Any]] = []


@functools.lru_cache(maxsize=1)
def _empty() -> Any:
    import mindspore
    from mindspore import mint

    return functools.partial(mint.empty, dtype=mindspore.float32, device="CPU")


def _hot() -> tuple[Any, Any, Any]:
    _HOT.append((_empty(), executor().sync, tensor_reads()[0]))
    return _HOT[0]


def new_float32(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """Return ``(tensor, array)``: a new contiguous float32 tensor of ``shape`` and a NumPy array over its memory."""
    empty, sync, address = _HOT[0] if _HOT else _hot()
    tensor = empty(shape)
    if type(shape) is not tuple:  # a list, a torch.Size: the general reads
        return tensor, host_array(tensor)
    sync()  # the tensor has its memory once the queued kernels ran
    key = (address(tensor), shape)
    try:
        return tensor, _ARRAYS[key]
    except KeyError:
        pass
    array = host_array(tensor, sync=False)
    if len(_ARRAYS) >= _MAX_ARRAYS:
        _ARRAYS.clear()
    _ARRAYS[key] = array
    return tensor, array


def owned_float32(array: Any) -> Any:
    """Return a new float32 tensor in MindSpore's memory holding a copy of ``array`` (float32, any layout)."""
    import numpy as np

    tensor, memory = new_float32(tuple(array.shape))
    np.copyto(memory, array)
    return tensor
