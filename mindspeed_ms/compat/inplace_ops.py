"""PyTorch's in-place tensor methods and operators for MindSpore's CPU backend.

On the CPU backend ``add_``/``sub_``/``mul_``/``div_``/``exp_`` and the operators ``+=``, ``-=``, ``/=``,
``//=``, ``%=`` return a new tensor and leave ``self`` (its aliases, a view's base) unchanged; ``**=`` has no
in-place form at all; ``zero_``/``masked_fill_`` have no CPU kernel; integer results are truncated where
PyTorch refuses the cast. Each replacement here first runs PyTorch's checks
(:func:`~mindspeed_ms.compat.inplace_checks.check_inplace`: dtype cast, overlap, leaf), then computes the
result out of place with MindSpore functions and writes it into ``self`` through views
(:func:`~mindspeed_ms.compat.inplace.write_back`).

Autograd: where PyTorch's backward of the in-place op needs the *original* ``self`` (``mul_``, ``div_``,
``pow_``), the result is computed from a copy of ``self`` (PyTorch saves ``original_self`` the same way),
so the write does not invalidate it. ``zero_``/``fill_``/``masked_fill_`` keep the gradient path to
``self`` (zero where filled), as PyTorch's ``leaf.grad`` is zeros, not None.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.compat.grad_edges import refuse_negative_integer_power
from mindspeed_ms.compat.host_cast import float_operand
from mindspeed_ms.compat.ieee_division import exact_integer, refuse_integer_zero, repair_floor, zero_divisors
from mindspeed_ms.compat.ieee_special import trunc_divide
from mindspeed_ms.compat.inplace import binary_on_host, view_adder, write_back, zero_on_host
from mindspeed_ms.compat.inplace_checks import (
    BOOL,
    FLOATING,
    INTEGRAL,
    InPlaceWriteError,
    category,
    check_inplace,
    check_leaf,
    check_no_internal_overlap,
    records_grad,
)
from mindspeed_ms.compat.recorded_inplace import binary_recorded_on_host

__all__ = ["zero_", "fill_", "masked_fill_", "add_", "sub_", "mul_", "div_", "exp_", "pow_", "floor_divide_",
           "remainder_", "detach_", "bitwise_and_", "bitwise_or_", "bitwise_xor_", "integer_division", "iadd", "isub",
           "itruediv", "ifloordiv", "ipow", "imod"]


def _records(self: Any, other: Any) -> bool:
    return records_grad(self) or records_grad(other)


def _original(self: Any, other: Any) -> Any:
    """Return ``self``, or a copy of it when autograd records the op (its backward needs the original)."""
    return self.clone() if _records(self, other) else self


def _is_one(value: Any) -> bool:
    """Return whether ``value`` is the Python ``int`` or ``float`` 1 itself (a bool, a tensor, a NumPy scalar: no)."""
    kind = type(value)
    return (kind is int or kind is float) and value == 1


def _scaled(other: Any, alpha: Any) -> Any:
    return other if alpha == 1 else other * alpha


def _fill_value(self: Any, value: Any) -> Any:
    """Return ``value`` (a Python scalar or 0-d tensor) converted to ``self``'s dtype as PyTorch casts it."""
    if hasattr(value, "item"):
        value = value.item()
    kind = category(self)
    if kind == BOOL:
        return bool(value)
    if kind == INTEGRAL:
        return int(value)  # C's cast truncates toward zero, as int() does
    return value


def _filled(op: str, self: Any, value: Any, mask: Any = None) -> Any:
    import mindspore
    import mindspore.ops as ops

    value = _fill_value(self, value)
    if mask is None:
        if not records_grad(self):
            return ops.fill(self.dtype, tuple(self.shape), value)
        mask = mindspore.tensor(True)
    # masked_fill keeps the gradient path to self (zero where filled), as PyTorch's fill_ backward does.
    return ops.masked_fill(self, mask, mindspore.tensor(value, dtype=self.dtype))


def zero_(self: Any) -> Any:
    """Fill ``self`` with zeros in place (``Tensor.zero_``; InplaceZero has no CPU kernel): in host memory where
    :func:`~mindspeed_ms.compat.inplace.zero_on_host` takes the tensor, else a filled tensor written back."""
    check_leaf("zero_", self)
    check_no_internal_overlap("zero_", self)
    if zero_on_host("zero_", self):
        return self
    return write_back("zero_", self, _filled("zero_", self, 0))


def fill_(self: Any, data: Any = None, *, value: Any = None) -> Any:
    """Fill ``self`` with a value in place (``Tensor.fill_`` does nothing on a view on CPU).

    The value is taken positionally, as ``data=`` (MSAdapter's name) or ``value=`` (PyTorch's); a tensor
    value must be 0-d, as in PyTorch.
    """
    fill = data if value is None else value
    if fill is None:
        raise TypeError("fill_() missing the value to fill with")
    if hasattr(fill, "shape") and len(fill.shape) != 0:
        raise InPlaceWriteError("fill_", "argument", f"fill_ only supports 0-dimension value tensor but got "
                                                     f"tensor with {len(fill.shape)} dimensions.")
    check_leaf("fill_", self)
    check_no_internal_overlap("fill_", self)
    return write_back("fill_", self, _filled("fill_", self, fill))


def masked_fill_(self: Any, mask: Any, value: Any) -> Any:
    """Fill ``self`` with ``value`` where ``mask`` is true, in place (``Tensor.masked_fill_``)."""
    if "Bool" not in str(getattr(mask, "dtype", "")):
        raise InPlaceWriteError("masked_fill_", "argument", f"masked_fill_ only supports boolean masks, but got "
                                                            f"mask with dtype {getattr(mask, 'dtype', type(mask))}")
    if hasattr(value, "shape") and len(value.shape) != 0:
        raise InPlaceWriteError("masked_fill_", "argument", f"masked_fill_ only supports a 0-dimensional value "
                                                            f"tensor, but got tensor with {len(value.shape)} "
                                                            f"dimension(s).")
    check_inplace("masked_fill_", self, mask)
    return write_back("masked_fill_", self, _filled("masked_fill_", self, value, mask))


def add_(self: Any, other: Any, *, alpha: Any = 1) -> Any:
    """Add ``alpha * other`` to ``self`` in place (``Tensor.add_``, which is out of place on CPU)."""
    if alpha == 1 and view_adder()(self, other):  # nothing PyTorch refuses: checked there (in C where built)
        return self
    import mindspore.ops as ops  # after the host add (DDP's, every step); ``import a.b as b``: no importlib Python

    check_inplace("add_", self, other, *(() if alpha == 1 else (alpha,)))
    if category(self) == BOOL and category(other) == BOOL:
        return write_back("add_", self, ops.logical_or(self, other))
    return write_back("add_", self, ops.add(self, _scaled(other, alpha)))


def sub_(self: Any, other: Any, *, alpha: Any = 1) -> Any:
    """Subtract ``alpha * other`` from ``self`` in place (``Tensor.sub_``, out of place on CPU)."""
    import mindspore.ops as ops

    if category(self) == BOOL and category(other) == BOOL:
        raise InPlaceWriteError("sub_", "argument", "Subtraction, the `-` operator, with two bool tensors is not "
                                                    "supported. Use the `^` or `logical_xor()` operator instead.")
    check_inplace("sub_", self, other, *(() if alpha == 1 else (alpha,)))
    return write_back("sub_", self, ops.sub(self, _scaled(other, alpha)))


def mul_(self: Any, other: Any) -> Any:
    """Multiply ``self`` by ``other`` in place (``Tensor.mul_``, out of place on CPU)."""
    import mindspore.ops as ops

    check_inplace("mul_", self, other)
    if _is_one(other) and category(self) in (INTEGRAL, FLOATING):
        # x * 1 is x bit for bit (integers, IEEE floats: NaN and -0.0 too), its gradient g * 1 is g: no kernel
        # (megatron's loss scaling, ``output_tensor *= cp_size`` every microbatch)
        return self
    if category(self) == BOOL and category(other) == BOOL:
        return write_back("mul_", self, ops.logical_and(self, other))
    if binary_on_host("mul_", self, other, "multiply") or binary_recorded_on_host("mul_", self, other, "multiply"):
        return self
    return write_back("mul_", self, ops.mul(_original(self, other), other))


def integer_division(self: Any, other: Any, rounding_mode: str) -> Any:
    """Return ``self / other`` rounded by ``rounding_mode`` (``"floor"``/``"trunc"``) for integer operands."""
    import mindspore.ops as ops

    refuse_integer_zero("div", self, other)
    quotient = exact_integer(self, other, ops.floor_divide(self, other))
    if rounding_mode == "floor":
        return quotient
    # trunc: floor rounds a negative, inexact quotient one below the truncated one (MindSpore's Trunc has
    # no integer kernel).
    inexact = ops.not_equal(ops.sub(self, ops.mul(quotient, other)), 0)
    negative = ops.logical_xor(ops.less(self, 0), ops.less(other, 0))
    return ops.where(ops.logical_and(inexact, negative), ops.add(quotient, 1), quotient)


def div_(self: Any, other: Any, *, rounding_mode: str | None = None) -> Any:
    """Divide ``self`` by ``other`` in place (``Tensor.div_``, out of place on CPU)."""
    import mindspore.ops as ops

    if rounding_mode not in (None, "trunc", "floor"):
        raise InPlaceWriteError("div_", "argument", f"div expected rounding_mode to be one of None, 'trunc', or "
                                                    f"'floor' but found '{rounding_mode}'")
    check_inplace("div_", self, other, result_category=FLOATING if rounding_mode is None else None)
    if rounding_mode is None and _is_one(other) and category(self) == FLOATING:
        return self  # x / 1 is x bit for bit, g / 1 is g: no kernel (``output_tensor /= num_microbatches``)
    if rounding_mode is not None and max(category(self), category(other)) <= INTEGRAL:
        return write_back("div_", self, integer_division(self, other, rounding_mode))
    if rounding_mode is None and binary_on_host("div_", self, other, "divide"):
        return self
    if rounding_mode is None:
        given, other = other, float_operand(other, self.dtype)  # an integer tensor converted on the host, as promotion
        if binary_recorded_on_host("div_", self, other, "divide", given):
            return self
    original = _original(self, other)
    quotient = zero_divisors(original, other, ops.div(original, other))
    if rounding_mode == "floor":
        quotient = repair_floor(original, other, quotient)
    elif rounding_mode == "trunc":
        quotient = trunc_divide(original, other, quotient)
    return write_back("div_", self, quotient)


def exp_(self: Any) -> Any:
    """Replace ``self`` by its exponential in place (``Tensor.exp_``, out of place on CPU)."""
    import mindspore.ops as ops

    check_inplace("exp_", self, result_category=FLOATING)
    return write_back("exp_", self, ops.exp(self))


def pow_(self: Any, exponent: Any) -> Any:
    """Raise ``self`` to ``exponent`` in place (``Tensor.pow_``, absent under MSAdapter)."""
    import mindspore.ops as ops

    check_inplace("pow_", self, exponent)
    refuse_negative_integer_power("Tensor.pow_", self, exponent)
    return write_back("pow_", self, ops.pow(_original(self, exponent), exponent))


def floor_divide_(self: Any, other: Any) -> Any:
    """Divide ``self`` by ``other`` rounding down, in place (``Tensor.floor_divide_``, ``//=``)."""
    import mindspore.ops as ops

    check_inplace("floor_divide_", self, other)
    if max(category(self), category(other)) <= INTEGRAL:
        return write_back("floor_divide_", self, integer_division(self, other, "floor"))
    original = _original(self, other)
    return write_back("floor_divide_", self, repair_floor(original, other, ops.floor_divide(original, other)))


def remainder_(self: Any, other: Any) -> Any:
    """Replace ``self`` by its remainder modulo ``other`` (sign of the divisor), in place (``%=``)."""
    from mindspore import mint

    check_inplace("remainder_", self, other)
    refuse_integer_zero("remainder_", self, other)
    original = _original(self, other)
    return write_back("remainder_", self, repair_floor(original, other, mint.remainder(original, other), True))


def _bitwise(op: str, self: Any, other: Any, logical: str, bitwise: str) -> Any:
    import mindspore.ops as ops

    if max(category(self), category(other)) > INTEGRAL:
        raise InPlaceWriteError(op, "argument", f"\"{op.strip('_')}_cpu\" not implemented for '{self.dtype}'")
    check_inplace(op, self, other)
    function = getattr(ops, logical if category(self) == BOOL else bitwise)
    return write_back(op, self, function(self, other))


def bitwise_and_(self: Any, other: Any) -> Any:
    """``self &= other`` in place (bool: logical and; integers: bitwise)."""
    return _bitwise("bitwise_and_", self, other, "logical_and", "bitwise_and")


def bitwise_or_(self: Any, other: Any) -> Any:
    """``self |= other`` in place (bool: logical or; integers: bitwise)."""
    return _bitwise("bitwise_or_", self, other, "logical_or", "bitwise_or")


def bitwise_xor_(self: Any, other: Any) -> Any:
    """``self ^= other`` in place (bool: logical xor; integers: bitwise)."""
    return _bitwise("bitwise_xor_", self, other, "logical_xor", "bitwise_xor")


def detach_(self: Any) -> Any:
    """Detach ``self`` from autograd in place (``Tensor.detach_``; InplaceStopGradient has no CPU kernel).

    A tensor without autograd history (a leaf) stops requiring grad, as in PyTorch. A tensor with history
    cannot be cut from it in place on this backend.

    Raises:
        InPlaceWriteError: ``self`` has autograd history (use ``x = x.detach()``).
    """
    if getattr(self, "grad_fn", None) is None:
        if getattr(self, "requires_grad", False):
            self.requires_grad_(False)
        return self
    raise InPlaceWriteError("detach_", "unsupported", "MindSpore's CPU backend cannot cut a tensor's autograd "
                                                      "history in place (no InplaceStopGradient kernel); use "
                                                      "'x = x.detach()'")


# The in-place operators: Python rebinds the name to what they return, so they return ``self`` itself
# (its aliases, a view's base and a Parameter's class stay what they were), as PyTorch's do.
def iadd(self: Any, other: Any) -> Any:
    """``self += other``: ``self.add_(other)``."""
    return self.add_(other)


def isub(self: Any, other: Any) -> Any:
    """``self -= other``: ``self.sub_(other)``."""
    return self.sub_(other)


def itruediv(self: Any, other: Any) -> Any:
    """``self /= other``: ``self.div_(other)``."""
    return self.div_(other)


def ifloordiv(self: Any, other: Any) -> Any:
    """``self //= other``: ``self.floor_divide_(other)``."""
    return self.floor_divide_(other)


def ipow(self: Any, other: Any) -> Any:
    """``self **= other``: ``self.pow_(other)``."""
    return self.pow_(other)


def imod(self: Any, other: Any) -> Any:
    """``self %= other``: ``self.remainder_(other)``."""
    return self.remainder_(other)
