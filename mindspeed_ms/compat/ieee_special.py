"""nan, signed zeros and infinities through MindSpore's CPU kernels as PyTorch computes them
(tests/conformance/cases/ops_special_values.py).

Every repair here keeps MindSpore's result where no special value is involved (the same bits, the same gradient)
and decides on the host, over the tensors' memory, whether there is anything to repair (one NumPy pass, ~0.3-1.3 ms a
million floats; nothing else on the common path):

* ``torch.maximum``/``torch.minimum`` drop a nan operand (``maximum(nan, 1)`` is 1; PyTorch: nan) and accept a
  Python number (PyTorch: TypeError).
* ``torch.clamp`` turns nan into a bound (``clamp(nan, -2, 2)`` is -2; PyTorch: nan), and a zero into the bound's
  zero (``clamp(-0.0, min=0.0)``: +0.0; PyTorch keeps -0.0: a value equal to a bound is not clamped).
* ``F.softplus(nan)`` is inf, ``relu(nan)`` is 0, ``relu(-0.0)`` is +0.0 (PyTorch: nan, nan, -0.0).
* ``expm1(-0.0)``/``log1p(-0.0)`` are +0.0 (PyTorch and C: -0.0).
* float ``//`` and ``torch.div(rounding_mode='floor')`` give ``inf // 3`` as inf (PyTorch: nan) and ``-1 // inf``
  as -0.0 (PyTorch: -1.0), float ``%`` gives ``1 % inf`` as nan (PyTorch: 1.0) and ``-0.0 % 1`` as +0.0:
  computed with PyTorch's formulas (``fmod`` and a correction), float ``trunc`` division of float16 fails (no
  Trunc kernel: computed on float16's quotient in float32).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from mindspeed_ms.compat.errors import OperandTypeError

__all__ = ["extremum_wrapper", "clamp_repair", "clamp_wrapper", "nan_keeping_wrapper", "relu_wrapper",
           "signed_zero_wrapper", "floor_divide", "remainder", "trunc_divide"]


def _floating(value: Any) -> bool:
    from mindspore import Tensor

    return isinstance(value, Tensor) and value.is_floating_point()


def _host(tensor: Any) -> np.ndarray | None:
    """The tensor's values on the host (NumPy over its memory), None for bfloat16 (NumPy has no such dtype)."""
    if str(tensor.dtype) == "BFloat16":
        return None
    return tensor.asnumpy()


def _may_hold_nan(tensor: Any) -> bool:
    """False only when ``tensor`` holds no nan (a sum is nan for a nan, or for inf and -inf: then True as well)."""
    values = _host(tensor)
    if values is None:
        return True
    return values.size > 0 and bool(np.isnan(np.add.reduce(values, axis=None)))


def _holds_negative_zero(values: np.ndarray) -> bool:
    """Whether ``values`` hold a -0.0 (its bits: only the sign bit set)."""
    size = values.dtype.itemsize
    bits = {2: "i2", 4: "i4", 8: "i8"}[size]  # native order, as the floats are
    return bool(np.any(values.view(bits) == -(2 ** (8 * size - 1))))


def _holds_zero(tensor: Any) -> bool:
    values = _host(tensor)
    return values is None or not np.all(values)


def _where(condition: Any, chosen: Any, other: Any) -> Any:
    from mindspore import ops

    if str(other.dtype) == "BFloat16":  # Select has no bfloat16 CPU kernel
        from mindspore import float32

        chosen = chosen.astype(float32) if hasattr(chosen, "astype") else chosen
        return ops.where(condition, chosen, other.astype(float32)).astype(other.dtype)
    return ops.where(condition, chosen, other)


def _keep_nan(source: Any, result: Any, gradient: bool = True) -> Any:
    """``result`` with ``source``'s nans where ``source`` is nan (broadcast); ``gradient``: the nans pass the
    gradient to ``source`` (relu: PyTorch's ``x <= 0 ? 0 : g`` passes it at nan), else none (clamp)."""
    from mindspore import ops

    if not _floating(source) or not _may_hold_nan(source):
        return result
    return _where(ops.isnan(source), (source if gradient else ops.stop_gradient(source)).astype(result.dtype), result)


def extremum_wrapper(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap ``torch.maximum``/``torch.minimum``: a nan operand gives nan (PyTorch propagates it), a Python number
    ``other`` is refused as PyTorch refuses it."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def extremum(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - PyTorch's name
            from mindspore import Tensor

            if not isinstance(other, Tensor):
                raise OperandTypeError(f"torch.{name}", f"{name}(): argument 'other' (position 2) must be Tensor, "
                                                        f"not {type(other).__name__}")
            out = kwargs.pop("out", None)
            result = op(input, other, *args, **kwargs)
            if _floating(result):
                result = _keep_nan(other, _keep_nan(input, result))
            if out is not None:
                out.copy_(result)
                return out
            return result

        return extremum

    return wrapper


def clamp_repair(x: Any, low: Any, high: Any, result: Any) -> Any:
    """``result`` (MindSpore's clamp of ``x``) with PyTorch's nan and signed zeros: a nan ``x`` stays nan, a zero
    ``x`` equal to a zero bound stays ``x`` (-0.0 is not below +0.0), a nan Python bound gives nan everywhere."""
    from mindspore import ops

    if not _floating(result):
        return result
    bounds = [bound for bound in (low, high) if bound is not None]
    if any(isinstance(bound, float) and math.isnan(bound) for bound in bounds):
        return ops.full_like(result, math.nan)
    # a nan x stays nan, with no gradient (PyTorch's clamp backward: x outside [min, max], nan included, gets 0)
    result = _keep_nan(x, result, gradient=False)
    zero_bound = any(not hasattr(bound, "dtype") and bound == 0 for bound in bounds)
    if zero_bound and _holds_zero(x):
        result = _where(ops.equal(x, 0), x.astype(result.dtype), result)
    return result


def clamp_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.clamp``/``Tensor.clamp`` (``op(input, min=None, max=None)``) with :func:`clamp_repair`."""

    @functools.wraps(op)
    def clamp(input: Any, min: Any = None, max: Any = None, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        out = kwargs.pop("out", None)
        result = clamp_repair(input, min, max, op(input, min, max, *args, **kwargs))
        if out is not None:
            out.copy_(result)
            return out
        return result

    return clamp


def nan_keeping_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a unary ``op(input, ...)`` that turns nan into a number (``F.softplus``): nan stays nan."""

    @functools.wraps(op)
    def keeping(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - PyTorch's name
        return _keep_nan(input, op(input, *args, **kwargs))

    return keeping


def relu_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``relu``: nan stays nan and -0.0 stays -0.0 (PyTorch's ``x < 0 ? 0 : x``)."""

    @functools.wraps(op)
    def relu(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - PyTorch's name
        from mindspore import ops

        result = op(input, *args, **kwargs)
        if not _floating(result) or not _floating(input):
            return result
        result = _keep_nan(input, result)
        values = _host(input)
        if values is None or _holds_negative_zero(values):
            # the zero's own sign, with relu's gradient there (PyTorch: 0 at x == 0, -0.0 included)
            result = _where(ops.equal(input, 0), ops.stop_gradient(input), result)
        return result

    return relu


def signed_zero_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a unary ``op`` with ``op(±0) == ±0`` in C and PyTorch (``expm1``, ``log1p``): a zero stays itself."""

    @functools.wraps(op)
    def keeping(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - PyTorch's name
        from mindspore import ops

        result = op(input, *args, **kwargs)
        if _floating(input) and _floating(result) and _holds_zero(input):
            result = _where(ops.equal(input, 0), input.astype(result.dtype), result)
        return result

    return keeping


def _work(*values: Any) -> tuple[Any, ...]:
    """Float tensors in float32 (float64 stays): PyTorch computes float16 and bfloat16 division in float32."""
    from mindspore import Tensor, float32, float64

    tensors = [value for value in values if isinstance(value, Tensor)]
    wide = float64 if any(tensor.dtype == float64 for tensor in tensors) else float32
    return tuple(Tensor(value, wide) if not isinstance(value, Tensor) else value.astype(wide) for value in values)


def _fmod(a: Any, b: Any) -> Any:
    """C's ``fmod``: MindSpore's gives ``fmod(x, ±inf)`` as nan (C: ``x`` for a finite ``x``) and a zero remainder
    of a negative dividend as +0.0 (C: ``-0.0``); both as C has them. (Left alone: MindSpore's ``fmod`` of a
    quotient beyond float32's range, e.g. ``fmod(3e38, 0.25)``, is ±inf; C's is exact, PyTorch's vectorized loop
    gives nan.)"""
    from mindspore import ops

    mod = ops.fmod(a, b)
    mod = ops.where(ops.equal(mod, 0), ops.mul(a, 0), mod)  # a zero remainder has the dividend's sign
    kept = ops.logical_and(ops.isinf(b), ops.isfinite(a))
    return ops.where(kept, ops.broadcast_to(a, mod.shape), mod)


def remainder(a: Any, b: Any, dtype: Any) -> Any:
    """PyTorch's float remainder: ``m = fmod(a, b)``; ``m + b`` where ``m`` is non-zero and of the other sign than
    ``b``; in ``dtype``."""
    from mindspore import ops

    a, b = _work(a, b)
    mod = _fmod(a, b)
    other_sign = ops.logical_and(ops.not_equal(mod, 0), ops.not_equal(ops.less(b, 0), ops.less(mod, 0)))
    return ops.where(other_sign, ops.add(mod, b), mod).astype(dtype)


def floor_divide(a: Any, b: Any, dtype: Any) -> Any:
    """PyTorch's float floor division (``div_floor_floating``): ``a / b`` where ``b`` is zero; else
    ``(a - fmod(a, b)) / b`` less one where the remainder has the other sign than ``b``, rounded to the nearest
    integer below; a zero quotient with the sign of ``a / b``; in ``dtype``."""
    from mindspore import ops

    a, b = _work(a, b)
    mod = _fmod(a, b)
    div = ops.div(ops.sub(a, mod), b)
    other_sign = ops.logical_and(ops.not_equal(mod, 0), ops.not_equal(ops.less(b, 0), ops.less(mod, 0)))
    div = ops.where(other_sign, ops.sub(div, 1), div)
    floor = ops.floor(div)
    floor = ops.where(ops.greater(ops.sub(div, floor), 0.5), ops.add(floor, 1), floor)
    true = ops.div(a, b)
    floor = ops.where(ops.not_equal(div, 0), floor, ops.mul(true, 0))
    exact = ops.mul(a, ops.reciprocal(b))  # a / ±0 as IEEE divides (MindSpore's division ignores the zero's sign)
    return ops.where(ops.equal(b, 0), exact, floor).astype(dtype)


def trunc_divide(a: Any, b: Any, quotient: Any) -> Any:
    """``trunc(quotient)`` computed in float32 for a float16/bfloat16 ``quotient`` (MindSpore has no Trunc kernel
    for them; float16's quotient truncated is exact in float32)."""
    from mindspore import float32, ops

    del a, b
    return ops.trunc(quotient.astype(float32)).astype(quotient.dtype)
