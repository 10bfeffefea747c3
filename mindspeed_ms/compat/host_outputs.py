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

from mindspeed_ms.compat.host_memory import host_array

__all__ = ["new_float32", "owned_float32"]


@functools.lru_cache(maxsize=1)
def _empty() -> Any:
    import mindspore
    from mindspore import mint

    return functools.partial(mint.empty, dtype=mindspore.float32, device="CPU")


def new_float32(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """Return ``(tensor, array)``: a new contiguous float32 tensor of ``shape`` and a NumPy array over its memory."""
    tensor = _empty()(shape)
    return tensor, host_array(tensor)


def owned_float32(array: Any) -> Any:
    """Return a new float32 tensor in MindSpore's memory holding a copy of ``array`` (float32, any layout)."""
    import numpy as np

    tensor, memory = new_float32(tuple(array.shape))
    np.copyto(memory, array)
    return tensor
