"""Result shapes PyTorch's OpInfo samples found wrong (scripts/opinfo_sweep.py; cases in
tests/conformance/cases/fix_opinfo_shapes.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13, silently:

- ``torch.any(x, dim, keepdim=True)`` drops the reduced dimension (MSAdapter's CPU path calls ``ops.any(input,
  dim)`` without ``keepdim``): ``(3, 5)`` gave ``(5,)``, PyTorch ``(1, 5)``; a tuple ``dim`` raised.
- ``torch.squeeze(x, ())`` and ``x.squeeze(())`` squeeze every size-1 dimension (``(1, 1, 1, 1)`` gave ``()``);
  PyTorch squeezes none of them (an empty list of dims).
- ``torch.nonzero(x, as_tuple=True)`` of a tensor without a nonzero element returns two ``(0, ndim)`` tensors
  (PyTorch: ``ndim`` tensors of shape ``(0,)``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

__all__ = ["any_dims_wrapper", "squeeze_no_dims_wrapper", "nonzero_tuple_wrapper", "flatten_method_wrapper",
           "ravel_method_wrapper"]


def _dims(dim: Any, ndim: int) -> list[int] | None:
    """``dim`` (an int or a non-empty sequence of ints) as sorted non-negative dims, None to leave to the op."""
    items = [dim] if isinstance(dim, int) and not isinstance(dim, bool) else dim
    if not isinstance(items, (tuple, list)) or not items:
        return None
    try:
        found = sorted({operator.index(item) % max(ndim, 1) for item in items
                        if -max(ndim, 1) <= operator.index(item) < max(ndim, 1)})
    except TypeError:
        return None
    return found if len(found) == len(items) else None


def any_dims_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.any(input, dim=None, keepdim=False, *, out=None)``: ``keepdim`` and tuple ``dim`` as PyTorch."""

    @functools.wraps(op)
    def any_as_torch(input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None) -> Any:
        shape = getattr(input, "shape", None)
        if dim is None or out is not None or shape is None or len(shape) == 0:
            return op(input, dim, keepdim, out=out)
        dims = _dims(dim, len(shape))
        if dims is None:
            return op(input, dim, keepdim, out=out)
        result = input
        for axis in reversed(dims):
            result = op(result, axis)
        if keepdim:
            result = result.reshape([1 if axis in dims else size for axis, size in enumerate(shape)])
        return result

    return any_as_torch


def squeeze_no_dims_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.squeeze(input, dim=None)`` / ``Tensor.squeeze``: an empty tuple or list of dims squeezes none."""

    @functools.wraps(op)
    def squeeze_as_torch(input: Any, dim: Any = None) -> Any:
        if isinstance(dim, (tuple, list)) and len(dim) == 0:
            return input.view(tuple(input.shape))
        return op(input, dim)

    return squeeze_as_torch


def nonzero_tuple_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.nonzero(input, *, as_tuple=False)``: ``as_tuple=True`` gives one index tensor per dimension."""

    @functools.wraps(op)
    def nonzero_as_torch(input: Any, *, as_tuple: bool = False) -> Any:
        shape = getattr(input, "shape", None)
        if not as_tuple or shape is None or len(shape) == 0:
            return op(input, as_tuple=as_tuple)
        indices = op(input)
        return tuple(indices[:, axis].contiguous() for axis in range(len(shape)))

    return nonzero_as_torch


def flatten_method_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.flatten(start_dim=0, end_dim=-1)``: ``torch.flatten`` (a view where the strides allow)."""

    @functools.wraps(op)
    def flatten_as_torch(self: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) > 2 or set(kwargs) - {"start_dim", "end_dim"} or not all(isinstance(a, int) for a in args):
            return op(self, *args, **kwargs)  # MindSpore's own forms (order=...)
        from msadapter.ops import other

        return other.flatten(self, *args, **kwargs)

    return flatten_as_torch


def ravel_method_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.ravel()``: ``contiguous().view(-1)`` (a copy for a non-contiguous tensor), as PyTorch."""

    @functools.wraps(op)
    def ravel_as_torch(self: Any) -> Any:
        if self.is_contiguous():
            return op(self)
        return self.contiguous().view(-1)

    return ravel_as_torch
