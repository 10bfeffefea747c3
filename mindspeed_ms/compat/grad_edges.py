"""PyTorch's gradients at the edges where MindSpore's backward formulas give nan, or its forward refuses
(tests/conformance/cases/ops_special_grad.py finds each against real PyTorch 2.13).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1:

- ``pow(x, 0)``: MindSpore's backward ``0 * x ** -1`` is nan at ``x == 0`` (PyTorch: 0 for the zero exponent); a
  tensor exponent: nan for the base at ``(0, 0)`` and for the exponent where the base is 0 (PyTorch masks both).
- ``a / b`` with a zero in ``b``: the forward repair of :mod:`.ieee_division` (a select between two quotients) left
  nan gradients (the select's zero times the kernel's ``g / 0``); :func:`zero_divisor_quotient` gives the repaired
  quotient PyTorch's ``div`` backward (``g / b`` and ``-g * (a / b) / b``, IEEE's division by a signed zero).
- ``sign``: no gradient (``x.grad`` None; PyTorch: zeros).

Nothing here runs on the common path: the Functions only for an input that requires a gradient (cumprod: and
holds a zero), the others behind a Python comparison (``exponent == 0``, a tensor exponent) or on the rare path
that already found a zero divisor / an infinity. The reductions' edges (norm, logsumexp, cumprod, empty
inputs, std) are in :mod:`.reduction_grad_edges`, the nn-level ones in :mod:`.nn_edges`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.inplace_checks import INTEGRAL, category

__all__ = ["float_tensor", "wants_grad", "host32", "pow_wrapper", "pow_backward", "zero_divisor_quotient",
           "sign_wrapper"]


def float_tensor(value: Any) -> bool:
    from mindspore import Tensor

    return isinstance(value, Tensor) and value.is_floating_point()


def wants_grad(value: Any) -> bool:
    """Whether autograd records ``value`` (a float tensor requiring a gradient, grad mode on): the cheap attribute
    first, so a tensor without a gradient costs one attribute read."""
    if not getattr(value, "requires_grad", False):
        return False
    import msadapter

    return float_tensor(value) and msadapter.is_grad_enabled()


# --- norms ---------------------------------------------------------------------------------------------------


# --- pow -------------------------------------------------------------------------------------------------------


def refuse_negative_integer_power(op: str, input: Any, exponent: Any) -> None:
    """Raise PyTorch's refusal of an integer or bool tensor raised to a negative Python integer (MindSpore returned
    truncated quotients, ``tensor([2, 3]) ** -1`` -> ``[0, 0]``, silently); a tensor exponent is computed on both."""
    if type(exponent) is int and exponent < 0 and hasattr(input, "dtype") and category(input) <= INTEGRAL:
        from mindspeed_ms.compat.errors import TorchRefusalError

        raise TorchRefusalError(op, "Integers to negative integer powers are not allowed.")


def pow_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``pow(input, exponent)``: a zero Python exponent gives PyTorch's zero gradient (MindSpore's backward
    ``0 * x ** -1`` is nan at ``x == 0``); an integer tensor to a negative Python integer is refused as PyTorch
    refuses it (:func:`refuse_negative_integer_power`); every other call is the op's."""

    @functools.wraps(op)
    def power(input: Any, exponent: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if type(exponent) is int and exponent < 0:  # the check's cheap half inline: pow runs in training steps
            refuse_negative_integer_power("torch.pow", input, exponent)
        if not isinstance(exponent, (int, float)):
            if (wants_grad(exponent) or (wants_grad(input) and float_tensor(exponent))) and not args and not kwargs:
                return _pow_function().apply(input, exponent, lambda: op(input, exponent))
            return op(input, exponent, *args, **kwargs)
        result = op(input, exponent, *args, **kwargs)
        if exponent == 0 and not isinstance(exponent, bool) and wants_grad(input) and not args and not kwargs:
            return _with_zero_gradient(result, input)
        return result

    return power


def _with_zero_gradient(result: Any, input: Any) -> Any:
    """``result``'s values with a gradient of zeros to ``input`` (a select that passes none to its unchosen side;
    the select's backward sums a broadcast ``input``'s share)."""
    from mindspore import ops

    return ops.where(ops.ones(tuple(result.shape), _bool()), ops.stop_gradient(result), input)


def sign_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``sign(input)``: for an input that requires a gradient, PyTorch's gradient of zeros (MindSpore's sign
    has none: ``x.grad`` stayed None)."""

    @functools.wraps(op)
    def sign(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        result = op(input, *args, **kwargs)
        if wants_grad(input) and not args and not kwargs:
            return _with_zero_gradient(result, input)
        return result

    return sign


@functools.lru_cache(maxsize=1)
def _pow_function() -> Any:
    class TensorPower(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``pow`` with a tensor exponent (the op's values) and PyTorch's ``pow_backward_self/_exponent``."""

        @staticmethod
        def forward(ctx: Any, base: Any, exponent: Any, compute: Callable[[], Any]) -> Any:
            result = compute()
            ctx.saved = (base, exponent, result, float_tensor(base) and bool(base.requires_grad),
                         bool(exponent.requires_grad))
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            base, exponent, result, base_grad, exponent_grad = ctx.saved
            del ctx.saved
            grad_base, grad_exponent = pow_backward(grad, base, exponent, result, base_grad, exponent_grad)
            return grad_base, grad_exponent, None

    return TensorPower


def pow_backward(grad: Any, base: Any, exponent: Any, result: Any, base_grad: bool,
                 exponent_grad: bool) -> tuple[Any, Any]:
    """PyTorch's gradients of ``base ** exponent`` (tensor exponent): ``g * e * b ** (e - 1)``, 0 where ``e == 0``;
    ``g * result * log(b)``, 0 where ``b == 0`` and ``e >= 0``."""
    from mindspore import Tensor, mint, ops

    base_tensor = base if isinstance(base, Tensor) else Tensor(base, exponent.dtype)
    zero = ops.zeros_like(grad)
    grad_base = grad_exponent = None
    if base_grad:
        values = mint.mul(grad, mint.mul(exponent, mint.pow(base_tensor, mint.sub(exponent, 1))))
        grad_base = _sum_to(mint.where(mint.eq(exponent, 0), zero, values), tuple(base_tensor.shape))
    if exponent_grad:
        skip = mint.logical_and(mint.eq(base_tensor, 0), mint.ge(exponent, 0))
        values = mint.mul(grad, mint.where(skip, zero, mint.mul(result, mint.log(base_tensor))))
        grad_exponent = _sum_to(values, tuple(exponent.shape))
    return grad_base, grad_exponent


def _sum_to(values: Any, shape: tuple[int, ...]) -> Any:
    """``values`` summed over the dimensions it was broadcast along to reach from ``shape``."""
    extra = len(values.shape) - len(shape)
    if extra:
        values = values.sum(tuple(range(extra)))
    axes = tuple(i for i, size in enumerate(shape) if size == 1 and values.shape[i] != 1)
    return values.sum(axes, keepdims=True) if axes else values


@functools.lru_cache(maxsize=1)
def _bool() -> Any:
    import mindspore

    return mindspore.bool_


# --- division by a zero ----------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _division_function() -> Any:
    class ZeroDivisorQuotient(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """The repaired quotient ``a / b`` with PyTorch's ``div`` backward computed by IEEE arithmetic (NumPy)."""

        @staticmethod
        def forward(ctx: Any, dividend: Any, divisor: Any, quotient: Any) -> Any:
            # (forward runs without grad mode: the operands' own flags)
            ctx.saved = (dividend, divisor, float_tensor(dividend) and bool(dividend.requires_grad),
                         float_tensor(divisor) and bool(divisor.requires_grad))
            return quotient

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            dividend, divisor, dividend_grad, divisor_grad = ctx.saved
            del ctx.saved
            g, a, b = (host32(value) for value in (grad, dividend, divisor))
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                grad_a = np.divide(g, b)
                grad_b = -g * np.divide(np.divide(a, b), b)
            return (_to_like(grad_a, dividend) if dividend_grad else None,
                    _to_like(grad_b, divisor) if divisor_grad else None, None)

    return ZeroDivisorQuotient


def host32(value: Any) -> np.ndarray:
    from mindspore import Tensor

    if not isinstance(value, Tensor):
        return np.asarray(value, dtype=np.float32)
    if str(value.dtype) in ("BFloat16", "Float16"):
        import mindspore

        value = value.astype(mindspore.float32)
    return np.asarray(value.asnumpy())


def _to_like(values: np.ndarray, like: Any) -> Any:
    """``values`` summed to ``like``'s shape (a broadcast operand) as a tensor of ``like``'s dtype."""
    from mindspore import Tensor

    shape = tuple(like.shape)
    extra = values.ndim - len(shape)
    if extra:
        values = values.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, size in enumerate(shape) if size == 1 and values.shape[i] != 1)
    if axes:
        values = values.sum(axis=axes, keepdims=True)
    dtype = like.dtype
    result = Tensor(np.ascontiguousarray(values, dtype=values.dtype if str(dtype) == "Float64" else np.float32))
    return result if result.dtype == dtype else result.astype(dtype)


def zero_divisor_quotient(dividend: Any, divisor: Any, quotient: Any) -> Any:
    """``quotient`` (the repaired ``dividend / divisor`` of a divisor holding a zero) with PyTorch's gradients for
    the operands that require one; as it is when neither does."""
    if not (wants_grad(dividend) or wants_grad(divisor)):
        return quotient
    from mindspore import ops

    return _division_function().apply(dividend, divisor, ops.stop_gradient(quotient))


# --- reductions of an empty tensor -----------------------------------------------------------------------------


# --- std -------------------------------------------------------------------------------------------------------


