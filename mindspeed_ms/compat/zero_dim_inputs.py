"""0-d inputs PyTorch's OpInfo samples found refused (scripts/opinfo_sweep.py; cases in
tests/conformance/cases/fix_zero_dim_inputs.py).

PyTorch treats a 0-d tensor as a one-element vector whose only dimension is ``0`` / ``-1`` and gives a 0-d result.
Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13, the MindSpore primitives refuse rank 0
with an untyped ValueError/RuntimeError where PyTorch works:

- ``softmax(x, 0)`` (``torch.softmax``, ``F.softmax``, ``Tensor.softmax``): "For primitive[Softmax], the axis must
  be in [0,0)".
- ``cumsum(x, 0)`` / ``cumprod(x, 0)``: "the rank of 'x' must be greater than 0".
- ``sort(x)`` / ``argsort(x)``: "For Sort, the check range left must be smaller than right number".
- ``topk(x, 1)``: "For 'TopK', the dimension of input must be greater than 0".
- ``index_select(x, 0, index)`` (one index): "The 'axis' must be in the range of [-0, 0)".
- ``nonzero(x)``: "Launch kernel failed, name: NonZero" (PyTorch: shape ``(1, 0)`` or ``(0, 0)``; with
  ``as_tuple=True`` one tensor of shape ``(1,)`` or ``(0,)``).
- ``torch.transpose(x, 0, -1)``: IndexError "list index out of range" (``x.transpose`` was right: a view of ``x``).

Each runs the op on ``x.reshape(1)`` and gives every result back as 0-d (autograd records the reshapes, so the
gradient is PyTorch's). A dim outside ``[-1, 0]`` is left to the op (it raises, as PyTorch does).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

__all__ = ["zero_dim_as_vector_wrapper", "zero_dim_index_select_wrapper", "zero_dim_topk_wrapper",
           "zero_dim_nonzero_wrapper", "zero_dim_transpose_wrapper"]


def _is_zero_dim(value: Any) -> bool:
    shape = getattr(value, "shape", None)
    return shape is not None and hasattr(value, "reshape") and len(shape) == 0


def _dim_fits(dim: Any) -> bool:
    """``dim`` names the only dimension of a 0-d tensor (``0``, ``-1``) or is left out (``None``)."""
    if dim is None:
        return True
    try:
        return operator.index(dim) in (0, -1) and not isinstance(dim, bool)
    except TypeError:
        return False


def _to_zero_dim(result: Any) -> Any:
    """Each one-element tensor of ``result`` (a tensor, or a tuple / named tuple of them) as 0-d."""
    if isinstance(result, tuple):
        items = [_to_zero_dim(item) for item in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    shape = getattr(result, "shape", None)
    if shape is not None and tuple(shape) == (1,):
        return result.reshape(())
    return result


def _dim_argument(args: tuple[Any, ...], kwargs: dict[str, Any], position: int) -> Any:
    if len(args) > position:
        return args[position]
    return kwargs.get("dim", kwargs.get("axis"))


def zero_dim_as_vector_wrapper(op: Callable[..., Any], *, dim_position: int = 0) -> Callable[..., Any]:
    """Wrap an op whose ``dim`` is argument ``dim_position`` after the input (softmax, cumsum, cumprod, sort,
    argsort, index_select): a 0-d input runs as a one-element vector and gives a 0-d result."""

    @functools.wraps(op)
    def zero_dim_as_torch(input: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_zero_dim(input) or not _dim_fits(_dim_argument(args, kwargs, dim_position)):
            return op(input, *args, **kwargs)
        return _to_zero_dim(op(input.reshape(1), *args, **kwargs))

    return zero_dim_as_torch


def zero_dim_index_select_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``index_select(input, dim, index)``: a 0-d input with one index (0-d or ``(1,)``) gives a 0-d result."""

    @functools.wraps(op)
    def index_select_as_torch(input: Any, dim: Any, index: Any, **kwargs: Any) -> Any:
        shape = getattr(index, "shape", None)
        if (not _is_zero_dim(input) or not _dim_fits(dim) or shape is None or len(shape) > 1
                or (len(shape) == 1 and shape[0] != 1)):
            return op(input, dim, index, **kwargs)
        return op(input.reshape(1), 0, index.reshape(1), **kwargs).reshape(())

    return index_select_as_torch


def zero_dim_topk_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``topk(input, k, dim=-1, ...)``: a 0-d input with ``k == 1`` gives 0-d values and indices."""

    @functools.wraps(op)
    def topk_as_torch(input: Any, k: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_zero_dim(input) or k != 1 or not _dim_fits(_dim_argument(args, kwargs, 0)):
            return op(input, k, *args, **kwargs)
        return _to_zero_dim(op(input.reshape(1), k, *args, **kwargs))

    return topk_as_torch


def zero_dim_nonzero_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``nonzero(input, *, as_tuple=False)``: a 0-d input gives shape ``(1, 0)`` (nonzero) or ``(0, 0)``."""

    @functools.wraps(op)
    def nonzero_as_torch(input: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_zero_dim(input) or args or set(kwargs) - {"as_tuple"}:
            return op(input, *args, **kwargs)
        found = op(input.reshape(1))  # (k, 1): k = 1 for a nonzero value, else 0
        if kwargs.get("as_tuple"):
            return (found.reshape(-1),)
        return found[:, :0]

    return nonzero_as_torch


def zero_dim_transpose_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.transpose(input, dim0, dim1)``: a 0-d input is ``input.transpose(dim0, dim1)`` (a view of it)."""

    @functools.wraps(op)
    def transpose_as_torch(input: Any, dim0: Any, dim1: Any) -> Any:
        if _is_zero_dim(input) and _dim_fits(dim0) and _dim_fits(dim1) and hasattr(input, "transpose"):
            return input.transpose(dim0, dim1)
        return op(input, dim0, dim1)

    return transpose_as_torch
