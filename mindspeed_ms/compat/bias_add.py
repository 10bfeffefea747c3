"""``activation + bias`` (a vector along the last dimension) through MindSpore's BiasAdd on the CPU backend.

Megatron adds each linear layer's bias as ``output + bias`` (``[sequence, batch, hidden]`` plus ``[hidden]``),
and the MLP adds ``intermediate + bias`` before the activation. MSAdapter's ``+`` runs MindSpore's AddExt,
whose broadcasting CPU kernel is slow (a 512 x 2048 activation: 8-25 ms, against 1 ms for an add of two
tensors of that shape), and autograd reduces the bias gradient with a ReduceSum over both leading
dimensions (~10 ms). MindSpore's ``BiasAdd`` over the activation viewed as 2-D (``[rows, hidden]``, the
bias along dimension 1) adds the same values (~1.7 ms) and its gradient is ``BiasAddGrad``.

Only that shape is taken: a contiguous float32/float16 tensor of at least :data:`MIN_ELEMENTS` elements and
two or more dimensions plus a 1-D tensor of the same dtype as long as its last dimension, with no ``alpha``.
The sum is the same float addition (bit-identical values); the bias gradient sums the same numbers in another
order (float32 rounding). Everything else goes to the wrapped ``add`` unchanged.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

__all__ = ["MIN_ELEMENTS", "bias_add_wrapper"]

#: below this many elements the broadcast add is cheap and the extra Python is not worth it
MIN_ELEMENTS = 65536


@functools.lru_cache(maxsize=1)
def _dtypes() -> tuple[Any, ...]:
    import mindspore

    return (mindspore.float32, mindspore.float16)


@functools.lru_cache(maxsize=1)
def _bias_add() -> Any:
    from mindspore import ops

    return ops.BiasAdd()


def bias_add_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.__add__`` / ``Tensor.add`` / ``torch.add``: a bias vector along the last dimension uses BiasAdd.

    Args:
        op: the add to wrap (``op(input, other, *args, **kwargs)``).

    Returns:
        ``op``'s signature.
    """

    @functools.wraps(op)
    def add(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        bias_shape = getattr(other, "_shape", None)
        if args or kwargs or bias_shape is None or len(bias_shape) != 1:
            return op(input, other, *args, **kwargs)
        shape = getattr(input, "_shape", None)
        if (shape is None or len(shape) < 2 or shape[-1] != bias_shape[0] or input.dtype not in _dtypes()
                or other.dtype is not input.dtype or math.prod(shape) < MIN_ELEMENTS or not input.is_contiguous()):
            return op(input, other)
        return _bias_add()(input.reshape(-1, shape[-1]), other).reshape(tuple(shape))

    return add
