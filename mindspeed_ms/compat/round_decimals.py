"""``torch.round(input, *, decimals, out)``, ``Tensor.round(decimals=...)`` and ``Tensor.round_`` as PyTorch (CPU; cases
in tests/conformance/cases/fix_round_decimals.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13: any ``decimals`` other than 0 raised
MindSpore's untyped ``RuntimeError: For Round only support decimals equal 0``, for every dtype; ``torch.round(x,
out=...)`` raised ``TypeError`` (MSAdapter's signature has no ``out``); ``Tensor.round_`` did not exist.

PyTorch's CPU kernel for ``decimals``: ``scale = 10 ** |decimals|`` in the op's math type (float32 for float16,
bfloat16 and float32 inputs; float64 for float64), then ``nearbyint(x * scale) / scale`` (``decimals > 0``) or
``nearbyint(x / scale) * scale`` (``decimals < 0``), cast back to the input's dtype. Here the same steps run in the
same dtypes (MindSpore's ``Round`` rounds half to even, as ``nearbyint``), so the results are PyTorch's bit for bit,
including a scale that overflows float32 (``decimals=-40``: nan, as PyTorch). Integer, bool and complex inputs with
``decimals`` raise PyTorch's ``NotImplementedError`` (:class:`~mindspeed_ms.compat.errors.DTypeNotSupportedError`);
an ``out`` of another dtype raises its ``RuntimeError``. The gradient is zero, as PyTorch's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["round_decimals_wrapper", "round_"]

_OP = "torch.round"


def _rounded(op: Callable[..., Any], input: Any, decimals: int) -> Any:
    import mindspore

    dtype = input.dtype
    if dtype not in (mindspore.float16, mindspore.bfloat16, mindspore.float32, mindspore.float64):
        from mindspeed_ms.compat.errors import DTypeNotSupportedError
        from mindspeed_ms.compat.inplace_checks import pytorch_dtype_name

        name = pytorch_dtype_name(dtype)
        raise DTypeNotSupportedError(_OP, name, f'"round_cpu" not implemented for \'{name}\'')
    math = mindspore.float64 if dtype == mindspore.float64 else mindspore.float32
    x = input if dtype == math else input.to(math)
    scale = 10.0 ** abs(decimals)  # a Python float: MindSpore takes it in the tensor's dtype, as PyTorch's cast
    result = op(x * scale) / scale if decimals > 0 else op(x / scale) * scale
    return result if dtype == math else result.to(dtype)


def round_decimals_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.round(input, *, decimals=0)`` / ``Tensor.round``: ``decimals`` and ``out`` as PyTorch."""

    @functools.wraps(op)
    def round_as_torch(input: Any, *args: Any, decimals: int = 0, out: Any = None, **kwargs: Any) -> Any:
        if args or kwargs:  # not PyTorch's signature: MSAdapter's own refusal
            return op(input, *args, decimals=decimals, **kwargs)
        result = op(input) if decimals == 0 else _rounded(op, input, int(decimals))
        if out is None:
            return result
        if out.dtype != result.dtype:
            from mindspeed_ms.compat.errors import TorchRefusalError
            from mindspeed_ms.compat.inplace_checks import pytorch_dtype_name

            raise TorchRefusalError(_OP, f"Found dtype {pytorch_dtype_name(out.dtype)} but expected "
                                         f"{pytorch_dtype_name(result.dtype)}")
        if tuple(out.shape) != tuple(result.shape):
            out.resize_(tuple(result.shape))
        out.copy_(result)
        return out

    return round_as_torch


def round_(self: Any, *, decimals: int = 0) -> Any:
    """``Tensor.round_(*, decimals=0)``: ``self`` rounded in place (through ``copy_``: autograd's in-place checks
    and version counter apply, a leaf that requires grad is refused as PyTorch refuses it)."""
    self.copy_(self.round(decimals=decimals))
    return self
