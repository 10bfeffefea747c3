"""``alpha=`` of ``torch.add`` / ``torch.sub`` as PyTorch applies it (tests/conformance/cases/fix_alpha.py).

MSAdapter's CPU ``sub`` (``torch.sub``, ``Tensor.sub``, with or without ``out=``) drops ``alpha``:
``torch.sub(a, b, alpha=2)`` is ``a - b`` (PyTorch: ``a - 2 * b``), silently. ``torch.subtract`` refuses the keyword
with a TypeError (PyTorch takes it). ``add`` applies ``alpha`` but skips PyTorch's two checks, so an integer or bool
tensor with a float ``alpha`` gives a float tensor, and bool tensors with an integer ``alpha`` an integer sum
(PyTorch: RuntimeError, and ``a or b`` for bools).

PyTorch computes ``sub(a, b, alpha=x)`` as ``add(a, b, alpha=-x)`` (its sub kernel is the add kernel with the
negated scalar): the subtraction with an ``alpha`` other than 1 goes to the add in force (patched) here, so both
share one arithmetic. PyTorch's checks run first (``alpha_check``): a float ``alpha`` with an integral result, or a
bool ``alpha`` with a non-bool result, raise :class:`~mindspeed_ms.compat.errors.TorchRefusalError` (a
RuntimeError) with PyTorch's message, and nothing is computed. A call without ``alpha`` (or ``alpha=1``) reaches
MSAdapter's op untouched: one dict lookup.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat import float64_scalars
from mindspeed_ms.compat.errors import TorchRefusalError

__all__ = ["add_alpha_wrapper", "check_alpha", "sub_alpha_wrapper", "subtract_wrapper"]

_FLOAT_ALPHA = "For integral input tensors, argument alpha must not be a floating point number."
_BOOL_ALPHA = "Boolean alpha only supported for Boolean results."


def _category(value: Any) -> int:
    """0 bool, 1 integer, 2 floating (or complex): PyTorch's promotion categories of an operand."""
    from mindspore import Tensor

    if isinstance(value, Tensor):
        if value.is_floating_point() or value.is_complex():
            return 2
        return 0 if str(value.dtype) == "Bool" else 1
    if isinstance(value, bool):
        return 0
    return 1 if isinstance(value, int) else 2


def check_alpha(op: str, input: Any, other: Any, alpha: Any) -> None:
    """PyTorch's ``alpha_check`` for ``op(input, other, alpha=alpha)``.

    Raises:
        TorchRefusalError: ``alpha`` is a float and the result integral or bool, or ``alpha`` is a bool and the
            result is not bool (PyTorch's RuntimeError and message).
    """
    result = max(_category(input), _category(other))
    if isinstance(alpha, bool):
        if result != 0:
            raise TorchRefusalError(op, _BOOL_ALPHA)
    elif isinstance(alpha, float) and result != 2:
        raise TorchRefusalError(op, _FLOAT_ALPHA)


def _changes(kwargs: dict[str, Any]) -> bool:
    """Whether ``kwargs`` carries an ``alpha`` that is not the integer 1."""
    alpha = kwargs.get("alpha", 1)
    return not (alpha == 1 and type(alpha) is int)


def _current_add() -> Callable[..., Any]:
    """``torch.add`` as it is now (MSAdapter's, with every wrap registered on it)."""
    from msadapter.ops import pointwise

    return pointwise.add  # type: ignore[no-any-return]


def _bool_add(input: Any, other: Any, alpha: Any, out: Any) -> Any:
    """``add`` of bool operands: ``input or (alpha and other)`` (PyTorch's bool add)."""
    from msadapter.ops import pointwise

    result = pointwise.logical_or(input, other) if alpha else input.clone()
    if out is None:
        return result
    out.copy_(result)
    return out


def add_alpha_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.add`` / ``Tensor.add``: PyTorch's alpha checks and bool rule, then ``op`` unchanged.

    Args:
        op: ``add(input, other, *, alpha=1, out=None)`` (the method: ``self`` first).

    Returns:
        ``op``'s signature and results.
    """
    from mindspeed_ms.compat import bfloat16_ops

    # bfloat16 with an alpha: MindSpore's CPU Mul of the alpha has no bfloat16 kernel (the OpInfo sweep's TypeError).
    # PyTorch's CPU kernel rounds alpha to bfloat16, other * alpha to bfloat16, then adds in float32 and rounds: the
    # same here (a call without alpha stays on op)
    widened = bfloat16_ops.elementwise_wrapper(op)

    def bfloat16_scaled(input: Any, other: Any, kwargs: dict[str, Any]) -> Any:
        import mindspore
        from mindspore import ops

        if set(kwargs) != {"alpha"} or not _both_bfloat16(input, other):
            return widened(input, other, **kwargs)
        float32, bfloat16 = mindspore.float32, mindspore.bfloat16
        alpha = ops.cast(ops.cast(mindspore.Tensor(kwargs["alpha"], float32), bfloat16), float32)  # as scalar_t
        scaled = ops.cast(ops.cast(other, float32) * alpha, bfloat16)
        return widened(input, scaled)

    @functools.wraps(op)
    def add(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        if args or not _changes(kwargs):
            return op(input, other, *args, **kwargs)
        alpha = kwargs["alpha"]
        check_alpha("torch.add", input, other, alpha)
        if _category(input) == 0 and _category(other) == 0:
            return _bool_add(input, other, alpha, kwargs.get("out"))
        if _both_bfloat16(input, other) and set(kwargs) == {"alpha"}:
            return bfloat16_scaled(input, other, kwargs)
        if type(alpha) is float and set(kwargs) <= {"alpha", "out"}:
            result = float64_scalars.float64_alpha(op, input, other, alpha, kwargs.get("out"))
            if result is not None:
                return result
        return bfloat16_scaled(input, other, kwargs)

    return add


def _both_bfloat16(input: Any, other: Any) -> bool:
    return str(getattr(input, "dtype", None)) == str(getattr(other, "dtype", None)) == "BFloat16"


def sub_alpha_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.sub`` / ``Tensor.sub``: an ``alpha`` other than 1 is ``add(input, other, alpha=-alpha)``.

    Args:
        op: ``sub(input, other, *, alpha=1, out=None)`` (the method: ``self`` first).

    Returns:
        ``op``'s signature; PyTorch's result for every ``alpha``.
    """

    @functools.wraps(op)
    def sub(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        if args or not _changes(kwargs):
            return op(input, other, *args, **kwargs)
        alpha = kwargs["alpha"]
        if _category(input) == 0 or _category(other) == 0 or not isinstance(alpha, (int, float)):
            return op(input, other, **kwargs)  # MSAdapter's (and our) refusals of bool operands / odd alphas
        check_alpha("torch.sub", input, other, alpha)
        return _current_add()(input, other, alpha=-alpha, out=kwargs.get("out"))

    return sub


def subtract_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.subtract`` (MSAdapter's takes neither ``alpha`` nor ``out``): with either, ``torch.sub``.

    Args:
        op: ``subtract(input, other)``.

    Returns:
        PyTorch's ``subtract(input, other, *, alpha=1, out=None)``.
    """

    @functools.wraps(op)
    def subtract(input: Any, other: Any, *, alpha: Any = 1, out: Any = None) -> Any:
        if out is None and alpha == 1 and type(alpha) is int:
            return op(input, other)
        from msadapter.ops import pointwise

        if out is None:
            return pointwise.sub(input, other, alpha=alpha)
        return pointwise.sub(input, other, alpha=alpha, out=out)

    return subtract
