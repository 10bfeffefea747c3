"""``Tensor.masked_fill(mask, value)`` with its gradient as a MaskedFill too (MindSpore's CPU backend).

MindSpore differentiates ``MaskedFill`` as ``grad * (1 - cast(mask))``: a Cast, a Sub and a Mul that
broadcasts the mask over the gradient, ~10 ms for megatron's causal mask (``[1, 1, 128, 128]``) over the
attention scores (``[4, 8, 128, 128]``) at the mid size, against ~1.5 ms for the fill itself. PyTorch's
gradient of ``input`` is ``grad.masked_fill(mask, 0)``: that is what the backward here computes (one
MaskedFill; the multiplication also differed from PyTorch where the gradient is NaN or inf at a masked
position, and gave ``-0`` for negative gradients there).

For float32 both run as NumPy copies over the host memory (:func:`~mindspeed_ms.compat.host_memory.host_array`:
``copyto(where=mask)``, ~0.5 ms for the mid-size scores against ~10 ms for MindSpore's MaskedFill kernel under
load); the values are the same bits. float16 keeps the MaskedFill kernels, as does a value float32 cannot hold
(PyTorch refuses it with an overflow error; the kernel path says what MindSpore says).

Taken: a float32/float16 tensor of at least :data:`MIN_ELEMENTS` elements, a bool mask that broadcasts to
its shape without enlarging it, and a Python number as the value. Everything else goes to the wrapped op.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.function_grads import own_function

__all__ = ["MIN_ELEMENTS", "masked_fill_wrapper"]

MIN_ELEMENTS = 65536
_FLOAT32_MAX = 3.4028234663852886e38


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    from mindspore import ops
    class MaskedFill(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """masked_fill whose gradient is the incoming gradient filled with 0 where the mask is set."""

        @staticmethod
        def forward(ctx: Any, input: Any, mask: Any, value: float) -> Any:
            ctx.mask = mask
            return ops.masked_fill(input, mask, value)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return ops.masked_fill(grad, ctx.mask, 0.0), None, None

    return MaskedFill


@functools.lru_cache(maxsize=1)
def _host_function() -> Any:
    """The same Function with NumPy's ``copyto(where=mask)`` over host memory (float32)."""
    import numpy as np

    from mindspeed_ms.compat.host_arithmetic import masked_fill
    from mindspeed_ms.compat.host_memory import host_array
    from mindspeed_ms.compat.host_outputs import new_float32

    def filled(tensor: Any, mask: Any, value: Any) -> Any:
        source = host_array(tensor)
        result, out = new_float32(source.shape)  # MindSpore's memory: autograd may free it (see host_outputs)
        masked_fill(source, mask, value, out)
        return result

    class HostMaskedFill(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """masked_fill and its gradient (0 where the mask is set) as NumPy copies."""

        @staticmethod
        def forward(ctx: Any, input: Any, mask: Any, value: float) -> Any:
            ctx.mask = host_array(mask)
            ctx.kept = mask  # the memory ctx.mask reads
            return filled(input, ctx.mask, np.float32(value))

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            result = filled(grad, ctx.mask, np.float32(0.0))
            del ctx.mask, ctx.kept
            return result, None, None

    return HostMaskedFill


@functools.lru_cache(maxsize=1)
def _dtypes() -> tuple[Any, ...]:
    import mindspore

    return (mindspore.float32, mindspore.float16)


def _taken(input: Any, mask: Any, value: Any) -> bool:
    import mindspore

    shape, mask_shape = getattr(input, "_shape", None), getattr(mask, "_shape", None)
    if shape is None or mask_shape is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if mask.dtype is not mindspore.bool_ or input.dtype not in _dtypes() or math.prod(shape) < MIN_ELEMENTS:
        return False
    if len(mask_shape) > len(shape):
        return False
    return all(m in (1, s) for m, s in zip(reversed(tuple(mask_shape)), reversed(tuple(shape))))


def _fits_float32(value: float) -> bool:
    """Whether PyTorch converts ``value`` to float32 without an overflow error (inf and NaN convert)."""
    return not math.isfinite(value) or abs(value) <= _FLOAT32_MAX


def masked_fill_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.masked_fill`` / ``torch.masked_fill`` (``op(input, mask, value)``)."""

    @functools.wraps(op)
    def masked_fill(input: Any, mask: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or not _taken(input, mask, value):
            return op(input, mask, value, *args, **kwargs)
        if input.dtype is _dtypes()[0] and _fits_float32(float(value)):
            return _host_function().apply(input, mask, float(value))
        return _function().apply(input, mask, float(value))

    return masked_fill
