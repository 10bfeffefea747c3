"""The vocab-parallel cross entropy's input gradient of float32 logits on the host (MindSpore's CPU backend).

Megatron's ``_VocabParallelCrossEntropy.backward`` turns the saved softmax into the logits' gradient:
``grad_2d[arange, target] -= softmax_update`` and ``grad_input *= grad_output.unsqueeze(-1)``
(``VocabParallelCrossEntropy.calculate_gradients``; :func:`mindspeed_ms.compat.megatron_core.calculate_gradients`
computes it out of place, as a ``one_hot``, a cast and three broadcasting kernels: ~2-3 ms each for the mid
size's ``[512, 128]`` logits on CPU). Here NumPy does PyTorch's two steps over the tensors' host memory, straight
into a new tensor of MindSpore's memory: the same float32 subtraction at each token's target and the same
multiplication, so the same bits as PyTorch's.

Taken: float32 softmax of at least :data:`MIN_ELEMENTS` elements (any size: the tiny model's ``[128, 128]`` too,
where the five kernels cost ~2-8 ms a call and NumPy ~0.1 ms), an integer target and a float32 update of one
entry per row, a float32 ``grad_output`` of one entry per row. Everything else goes to the wrapped function.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.host_arithmetic import cross_entropy_gradient

__all__ = ["MIN_ELEMENTS", "calculate_gradients_wrapper"]

#: the host path from the first element: its arithmetic is the kernels' (bit for bit), and at every size it is
#: cheaper than MindSpore's five kernels (OneHot, Cast, Mul, Sub, Mul: ~250 us each in PyNative at the tiny size)
MIN_ELEMENTS = 1


@functools.lru_cache(maxsize=1)
def _kinds() -> tuple[Any, frozenset[Any]]:
    import mindspore

    return mindspore.float32, frozenset((mindspore.int32, mindspore.int64))


def _taken(grad_2d: Any, masked_target_1d: Any, softmax_update: Any, grad_input: Any, grad_output: Any) -> bool:
    shape = getattr(grad_2d, "_shape", None)
    float32, integers = _kinds()
    if shape is None or len(shape) != 2 or grad_2d.dtype is not float32 or math.prod(shape) < MIN_ELEMENTS:
        return False
    rows = shape[0]
    for tensor, kinds in ((masked_target_1d, integers), (softmax_update, (float32,)), (grad_output, (float32,))):
        if getattr(tensor, "_shape", None) is None or tensor.dtype not in kinds or math.prod(tensor._shape) != rows:
            return False
    input_shape = getattr(grad_input, "_shape", None)
    return input_shape is not None and math.prod(input_shape) == math.prod(shape) and input_shape[-1] == shape[1]


def calculate_gradients_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``VocabParallelCrossEntropy.calculate_gradients(grad_2d, arange_1d, masked_target_1d, softmax_update,
    grad_input, grad_output)``: float32 logits on the host."""

    @functools.wraps(op)
    def calculate_gradients(grad_2d: Any, arange_1d: Any, masked_target_1d: Any, softmax_update: Any,
                            grad_input: Any, grad_output: Any) -> Any:
        if not _taken(grad_2d, masked_target_1d, softmax_update, grad_input, grad_output):
            return op(grad_2d, arange_1d, masked_target_1d, softmax_update, grad_input, grad_output)
        from mindspeed_ms.compat.host_memory import host_array
        from mindspeed_ms.compat.host_outputs import new_float32

        rows = grad_2d._shape[0]
        result, out = new_float32(tuple(grad_input._shape))
        cross_entropy_gradient(host_array(grad_2d), host_array(masked_target_1d, sync=False).reshape(rows),
                               host_array(softmax_update, sync=False).reshape(rows),
                               host_array(grad_output, sync=False).reshape(rows), out.reshape(grad_2d._shape))
        return result

    return calculate_gradients
