"""Division by a zero as PyTorch computes it (tests/conformance/cases/ops_special_values.py).

MindSpore's CPU division kernels (Div/RealDiv, DivMod, FloorDiv) give ``x / -0.0`` the sign of ``x / +0.0``
(``1 / -0.0`` is ``+inf``; PyTorch and IEEE 754: ``-inf``) and ``nan / 0.0`` is ``-inf`` (PyTorch: ``nan``), on every
path that reaches them: ``a / b``, ``torch.div`` (every rounding mode), ``torch.true_divide``, ``Tensor.div``,
``Tensor.div_``, ``/=``, ``s / tensor``. Integer division and remainder by zero return a number where PyTorch
raises ``RuntimeError: ZeroDivisionError``.

:func:`zero_divisors` repairs a float quotient where the divisor is a zero: there ``a / b`` is ``a * (1 / b)``
exactly (``1 / ±0`` is ``±inf`` in MindSpore's Reciprocal, and ``a * ±inf`` is IEEE's ``a / ±0`` for every ``a``,
nan and zero included), and nowhere else is anything changed: the common quotient keeps MindSpore's bits. A
Python-number divisor costs one comparison on the host; a tensor divisor one ``== 0`` and one ``any`` (no zero:
the quotient as it came).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from mindspeed_ms.compat import grad_edges, ieee_special
from mindspeed_ms.compat.errors import TorchRefusalError

__all__ = ["zero_divisors", "division_wrapper", "floor_wrapper", "repair_floor", "exact_integer",
           "refuse_integer_zero"]

_ZERO_DIVISION = "ZeroDivisionError"


def _is_tensor(value: Any) -> bool:
    from mindspore import Tensor

    return isinstance(value, Tensor)


def _floating(value: Any) -> bool:
    return _is_tensor(value) and value.is_floating_point()


def _integral(value: Any) -> bool:
    if _is_tensor(value):
        return not value.is_floating_point() and not value.is_complex()
    return isinstance(value, int)  # bool is an int


def _has_zero(divisor: Any) -> bool:
    from mindspore import ops

    if not _is_tensor(divisor):
        return isinstance(divisor, (int, float)) and divisor == 0
    if divisor.size == 0:
        return False
    if str(divisor.dtype) == "BFloat16":  # NumPy has no bfloat16: MindSpore's Equal in float32
        return bool(ops.equal(_comparable(divisor), 0).any())
    # NumPy over the tensor's memory (asnumpy shares it on CPU): 1.3 ms a million floats, Equal + Any 15 ms
    return not np.all(divisor.asnumpy())


def _comparable(tensor: Any) -> Any:
    """``tensor``, in float32 where it is bfloat16 (Equal and Select have no bfloat16 CPU kernel)."""
    return tensor.astype(_float32()) if str(tensor.dtype) == "BFloat16" else tensor


def zero_divisors(dividend: Any, divisor: Any, quotient: Any) -> Any:
    """Return ``quotient`` (``dividend / divisor``, any rounding mode) with IEEE's ``dividend / ±0`` wherever
    ``divisor`` is a zero (``±inf`` by the signs of both, ``nan`` for ``0 / 0`` and ``nan / 0``).

    An integral quotient is returned as it is (integer division by zero is refused before: see
    :func:`refuse_integer_zero`).
    """
    from mindspore import ops

    if not _floating(quotient) or not _has_zero(divisor):
        return quotient
    work = quotient.dtype if str(quotient.dtype) in ("Float32", "Float64") else _float32()
    if not _is_tensor(divisor):
        infinity = math.copysign(math.inf, divisor) if isinstance(divisor, float) else math.inf
        fixed = ops.mul(_as(dividend, work), infinity)
        return fixed.astype(quotient.dtype) if fixed.dtype != quotient.dtype else fixed
    fixed = ops.mul(_as(dividend, work), ops.reciprocal(_as(divisor, work)))
    if str(quotient.dtype) == "BFloat16":
        repaired = ops.where(ops.equal(_comparable(divisor), 0), fixed, quotient.astype(work)).astype(quotient.dtype)
    else:
        repaired = ops.where(ops.equal(divisor, 0), fixed.astype(quotient.dtype), quotient)
    # the select's backward would pass nan (its zero times the kernel's g / 0): PyTorch's div backward instead
    return grad_edges.zero_divisor_quotient(dividend, divisor, repaired)


def _float32() -> Any:
    from mindspore import float32

    return float32


def _as(value: Any, dtype: Any) -> Any:
    from mindspore import Tensor

    if not _is_tensor(value):
        return Tensor(value, dtype)
    return value if value.dtype == dtype else value.astype(dtype)


def refuse_integer_zero(op: str, dividend: Any, divisor: Any) -> None:
    """Raise PyTorch's ``RuntimeError: ZeroDivisionError`` when both operands are integral and ``divisor`` holds a
    zero (MindSpore returns a number)."""
    if _integral(dividend) and _integral(divisor) and _has_zero(divisor):
        raise TorchRefusalError(op, _ZERO_DIVISION)


def division_wrapper(name: str, reflected: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a division ``op(self, other, *, rounding_mode=None, out=None)`` (``other / self`` when ``reflected``):
    integer division by zero refused (with a rounding mode: true division of integers is a float division), a
    float quotient repaired where the divisor is a zero (:func:`zero_divisors`), float floor division by PyTorch's
    formula and float16 truncation in float32 (:mod:`mindspeed_ms.compat.ieee_special`)."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def divide(self: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
            dividend, divisor = (other, self) if reflected else (self, other)
            mode = kwargs.get("rounding_mode")
            out = kwargs.pop("out", None)
            if mode is not None:
                refuse_integer_zero(name, dividend, divisor)
            if mode is not None and (_float_operand(self) or _float_operand(other)):
                plain = dict(kwargs, rounding_mode=None)
                quotient = zero_divisors(dividend, divisor, op(self, other, *args, **plain))
                if mode == "floor":
                    quotient = ieee_special.floor_divide(dividend, divisor, quotient.dtype)
                else:
                    quotient = ieee_special.trunc_divide(dividend, divisor, quotient)
            else:
                quotient = zero_divisors(dividend, divisor, op(self, other, *args, **kwargs))
            if out is not None:
                out.copy_(quotient)
                return out
            return quotient

        return divide

    return wrapper


def _float_operand(value: Any) -> bool:
    return isinstance(value, float) or _floating(value)


def floor_wrapper(name: str, reflected: bool = False,
                  remainder: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a floor division (or, with ``remainder``, a remainder) ``op(self, other)``: integer operands with a
    zero divisor raise PyTorch's ``RuntimeError: ZeroDivisionError``; a float result is PyTorch's formula's
    (:func:`~mindspeed_ms.compat.ieee_special.floor_divide`, :func:`~mindspeed_ms.compat.ieee_special.remainder`)
    in the dtype MindSpore's op gives."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def divide(self: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
            dividend, divisor = (other, self) if reflected else (self, other)
            refuse_integer_zero(name, dividend, divisor)
            result = op(self, other, *args, **kwargs)
            return repair_floor(dividend, divisor, result, remainder)

        return divide

    return wrapper


def repair_floor(dividend: Any, divisor: Any, result: Any, remainder: bool = False) -> Any:
    """``result`` (MindSpore's floor division or remainder) as PyTorch computes it: floats by PyTorch's formula,
    int64 beyond 2**53 exactly (MindSpore's FloorDiv/FloorMod go through float64: ``-2**63 // 3`` is off by 171)."""
    if not _floating(result):
        return exact_integer(dividend, divisor, result, remainder)
    if remainder:
        return ieee_special.remainder(dividend, divisor, result.dtype)
    return ieee_special.floor_divide(dividend, divisor, result.dtype)


#: integers up to this magnitude survive MindSpore's float64 floor division exactly
_EXACT_IN_FLOAT64 = 2 ** 53


def exact_integer(dividend: Any, divisor: Any, result: Any, remainder: bool = False) -> Any:
    """``result`` (an integral floor division or remainder), recomputed by NumPy's exact int64 arithmetic when an
    operand reaches 2**53 in magnitude (one host pass over each tensor operand to tell; integers have no gradient)."""
    from mindspore import Tensor

    if not _is_tensor(result) or result.size == 0 or str(result.dtype) not in ("Int64", "UInt64"):
        return result
    operands = [value.asnumpy() if _is_tensor(value) else np.asarray(value) for value in (dividend, divisor)]
    if all(int(np.abs(values.astype(np.float64)).max(initial=0)) < _EXACT_IN_FLOAT64 for values in operands):
        return result
    dtype = np.int64 if str(result.dtype) == "Int64" else np.uint64
    a, b = (np.broadcast_to(values, result.shape).astype(dtype) for values in operands)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        exact = np.remainder(a, b) if remainder else np.floor_divide(a, b)
    return Tensor(np.ascontiguousarray(exact))
