"""Softmax over the last dimension of large float32 tensors computed by NumPy on the host (MindSpore's CPU backend).

Megatron's attention takes the softmax of its ``[batch, heads, seq, seq]`` scores (``FusedScaleMaskSoftmax`` on a
CPU: the masked scores through ``torch.nn.Softmax(dim=-1)``). At the mid size (``[4, 8, 128, 128]``) MindSpore's
CPU ``Softmax`` kernel takes ~3-8 ms and its ``SoftmaxGrad`` ~6-14 ms (a broadcasting Sub), where PyTorch spends
~1 ms on both; NumPy over the tensors' host memory (:func:`~mindspeed_ms.compat.host_memory.host_array`) runs
the same arithmetic in ~1-2 ms each.

The arithmetic is PyTorch's CPU kernel's (``aten/src/ATen/native/cpu/SoftMaxKernel.cpp``, last dimension), in its
order: ``e = exp(x - max(x))``, ``y = e * (1 / sum(e))``; the backward ``dx = (dy - sum(dy * y)) * y``. The
exponential is NumPy's float32 ``exp`` (within 1 unit in the last place; PyTorch's own is a vectorised
approximation, MindSpore's float32 Exp CPU kernel is off by up to ~40 units), the sums are NumPy's float32 sums
(pairwise): results agree with PyTorch's to float32 rounding (tests/test_compat_host_softmax.py measures it against
the reference interpreter). A row of ``-inf`` gives NaN, as in PyTorch.

Taken: float32 tensors of at least :data:`MIN_ELEMENTS` elements, ``dim`` the last dimension, no ``dtype``.
Everything else (other dimensions, dtypes, small tensors: the tiny model keeps MindSpore's kernels) goes to the
wrapped function.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_arithmetic import softmax_backward, softmax_forward

__all__ = ["MIN_ELEMENTS", "softmax_backward", "softmax_forward", "softmax_wrapper"]

#: below this many elements MindSpore's kernels are as fast as the round trip through NumPy
MIN_ELEMENTS = 65536


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    import numpy as np

    from mindspeed_ms.compat.host_memory import host_array
    from mindspeed_ms.compat.host_outputs import new_float32

    class HostSoftmax(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """softmax over the last dimension, forward and backward in NumPy."""

        @staticmethod
        def forward(ctx: Any, input: Any) -> Any:
            shape = tuple(input._shape)
            result, memory = new_float32(shape)  # MindSpore's memory: autograd may free it (see host_outputs)
            y = softmax_forward(np.ascontiguousarray(host_array(input)).reshape(-1, shape[-1]),
                                memory.reshape(-1, shape[-1])).copy()  # the backward's own copy of the output
            ctx.saved = (y, shape)
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            y, shape = ctx.saved
            del ctx.saved
            result, out = new_float32(shape)  # MindSpore's memory, written by the arithmetic itself
            softmax_backward(np.ascontiguousarray(host_array(grad)).reshape(y.shape), y, out.reshape(y.shape))
            return result

    return HostSoftmax


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def _taken(input: Any, dim: Any) -> bool:
    shape = getattr(input, "_shape", None)
    if shape is None or input.dtype is not _float32() or math.prod(shape) < MIN_ELEMENTS:
        return False
    return not isinstance(dim, bool) and isinstance(dim, int) and dim in (-1, len(shape) - 1)


def softmax_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.softmax(input, dim=None, ..., dtype=None)`` / ``torch.softmax(input, dim, dtype=None)`` /
    ``Tensor.softmax(dim, dtype=None)``: ``op(input, dim, ...)``."""

    @functools.wraps(op)
    def softmax(input: Any, *args: Any, **kwargs: Any) -> Any:
        dim = args[0] if len(args) == 1 and not kwargs else kwargs.get("dim") if not args else None
        if set(kwargs) - {"dim"} or not _taken(input, dim):
            return op(input, *args, **kwargs)
        return _function().apply(input)

    return softmax
