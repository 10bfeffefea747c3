"""Reshapes of an empty tensor with an ambiguous ``-1`` (scripts/opinfo_sweep.py; cases in
tests/conformance/cases/fix_empty_reshapes.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13: ``torch.ones(0, 3).view(0, -1)`` (and
``reshape``, ``torch.reshape``) gives shape ``(0, 0)``, silently; PyTorch raises RuntimeError ("cannot reshape
tensor of 0 elements into shape [0, -1] because the unspecified dimension size -1 can be any value and is
ambiguous"): any size would fit. The wrappers raise :class:`~mindspeed_ms.compat.errors.TorchRefusalError` (a
RuntimeError) with PyTorch's message; every other shape goes to the op.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

__all__ = ["ambiguous_method_wrapper", "ambiguous_function_wrapper"]


def _sizes(args: tuple[Any, ...]) -> list[int] | None:
    """The requested sizes (``view(2, -1)`` or ``view((2, -1))``) as ints, None for anything else (a dtype)."""
    items = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
    try:
        return [operator.index(item) for item in items]
    except TypeError:
        return None


def _refuse_if_ambiguous(op_name: str, input: Any, sizes: list[int] | None) -> None:
    shape = getattr(input, "shape", None)
    if sizes is None or shape is None or sizes.count(-1) != 1:
        return
    numel = 1
    for size in shape:
        numel *= int(size)
    known = 1
    for size in sizes:
        known *= size if size != -1 else 1
    if numel == 0 and known == 0:
        from mindspeed_ms.compat.errors import TorchRefusalError

        raise TorchRefusalError(op_name, f"cannot reshape tensor of 0 elements into shape {sizes} because the "
                                         "unspecified dimension size -1 can be any value and is ambiguous")


def ambiguous_method_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.view(*shape)`` / ``Tensor.reshape(*shape)``: an ambiguous ``-1`` of 0 elements raises."""

    @functools.wraps(op)
    def reshape_as_torch(self: Any, *args: Any, **kwargs: Any) -> Any:
        # on every view/reshape of a training step: only an empty tensor (a 0 in its shape) is looked at further
        if 0 in getattr(self, "_shape", (0,)) and args and not kwargs:
            _refuse_if_ambiguous(f"Tensor.{op.__name__}", self, _sizes(args))
        return op(self, *args, **kwargs)

    return reshape_as_torch


def ambiguous_function_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.reshape(input, shape)``: an ambiguous ``-1`` of 0 elements raises."""

    @functools.wraps(op)
    def reshape_as_torch(input: Any, shape: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(shape, (tuple, list)):
            _refuse_if_ambiguous("torch.reshape", input, _sizes((shape,)))
        return op(input, shape, *args, **kwargs)

    return reshape_as_torch
