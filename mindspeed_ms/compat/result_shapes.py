"""Result shapes PyTorch's OpInfo samples found wrong (scripts/opinfo_sweep.py; cases in
tests/conformance/cases/fix_opinfo_shapes.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13, silently:

- ``torch.any(x, dim, keepdim=True)`` drops the reduced dimension (MSAdapter's CPU path calls ``ops.any(input,
  dim)`` without ``keepdim``): ``(3, 5)`` gave ``(5,)``, PyTorch ``(1, 5)``; a tuple ``dim`` raised, also of
  ``x.any(dim=(0, 1))`` (MindSpore's ``Tensor.any`` takes one int).
- ``torch.squeeze(x, ())`` and ``x.squeeze(())`` squeeze every size-1 dimension (``(1, 1, 1, 1)`` gave ``()``);
  PyTorch squeezes none of them (an empty list of dims).
- ``torch.nonzero(x, as_tuple=True)`` of a tensor without a nonzero element returns two ``(0, ndim)`` tensors
  (PyTorch: ``ndim`` tensors of shape ``(0,)``).
- ``torch.arange(0, 2.5, 1, dtype=torch.int64)`` computes in float: ``[0, 1, 2]``; PyTorch truncates the bounds and
  the step to integers first: ``[0, 1]`` (``arange(0, -3.5, -2, dtype=int64)``: ``[0, -2]``); ``step=0`` is accepted
  (PyTorch: ValueError).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

__all__ = ["any_dims_wrapper", "any_dims_method_wrapper", "squeeze_no_dims_wrapper", "nonzero_tuple_wrapper",
           "flatten_method_wrapper", "ravel_method_wrapper", "arange_wrapper"]


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


def _any_each(op: Callable[..., Any], input: Any, dims: list[int], keepdim: bool, shape: Any) -> Any:
    """``op(input, axis)`` over each of ``dims`` (last first), the reduced dims kept as 1 with ``keepdim``."""
    result = input
    for axis in reversed(dims):
        result = op(result, axis)
    if keepdim:
        result = result.reshape([1 if axis in dims else size for axis, size in enumerate(shape)])
    return result


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
        return _any_each(op, input, dims, keepdim, shape)

    return any_as_torch


def any_dims_method_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.any(dim=None, keepdim=False)``: a tuple or list ``dim`` reduces each of its dims (PyTorch)."""

    @functools.wraps(op)
    def any_as_torch(self: Any, *args: Any, **kwargs: Any) -> Any:
        dim = args[0] if args else kwargs.get("dim")
        shape = getattr(self, "shape", None)
        if not isinstance(dim, (tuple, list)) or shape is None or len(args) > 2 or set(kwargs) - {"dim", "keepdim"}:
            return op(self, *args, **kwargs)
        if not dim:  # no dim to reduce: each element's truth, as PyTorch (uint8 stays uint8)
            import mindspore

            truth = self.clone() if self.dtype == mindspore.bool_ else self.bool()  # a new tensor, as PyTorch's
            return truth.to(mindspore.uint8) if self.dtype == mindspore.uint8 else truth
        if len(shape) == 0:
            return op(self, *args, **kwargs)
        dims = _dims(dim, len(shape))
        keepdim = args[1] if len(args) > 1 else kwargs.get("keepdim", False)
        if dims is None:
            return op(self, *args, **kwargs)
        return _any_each(op, self, dims, keepdim, shape)

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


_INTEGER_DTYPES = frozenset({"Int8", "Int16", "Int32", "Int64", "UInt8"})


def arange_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.arange(start=0, end=None, step=1, *, dtype=None, ...)``: a zero step raises ValueError, and for an
    integer ``dtype`` float bounds and step are truncated toward zero first, as PyTorch's integer arange."""

    @functools.wraps(op)
    def arange_as_torch(start: Any = 0, end: Any = None, step: Any = 1, **kwargs: Any) -> Any:
        if type(step) is int and step != 0 and type(start) is int and (end is None or type(end) is int):
            return op(start, end, step, **kwargs)  # the common all-int call
        if isinstance(step, (int, float)) and step == 0:
            raise ValueError("torch.arange: step must be nonzero (got step=0): pass a positive or negative step")
        dtype = kwargs.get("dtype")
        bounds = (start, step) if end is None else (start, end, step)
        if (dtype is not None and str(dtype) in _INTEGER_DTYPES
                and any(isinstance(b, float) for b in bounds) and all(isinstance(b, (int, float)) for b in bounds)):
            return _integer_arange(op, 0 if end is None else start, start if end is None else end, step, kwargs)
        return op(start, end, step, **kwargs)

    return arange_as_torch


def _integer_arange(op: Callable[..., Any], start: float, end: float, step: float, kwargs: dict[str, Any]) -> Any:
    """PyTorch's arange of an integer dtype: values ``int(start) + i * int(step)``; the length from the truncated
    bounds in integer arithmetic for int64, from the given bounds in double for the other integer dtypes."""
    first, last, stride = int(start), int(end), int(step)
    if str(kwargs["dtype"]) == "Int64":
        if stride == 0:
            raise ValueError("torch.arange: step must be nonzero (an int64 arange truncates the step toward zero, "
                             f"{step!r} -> 0): pass a step of magnitude >= 1")
        return op(first, last, stride, **kwargs)
    size = math.ceil((end - start) / step)
    if size < 0:
        return op(first, last, stride, **kwargs)  # MindSpore refuses the inconsistent sign
    if stride != 0:
        return op(first, first + size * stride, stride, **kwargs)
    requires_grad = kwargs.pop("requires_grad", False)
    result = op(0, size, 1, **kwargs).fill_(first)  # PyTorch: size copies of int(start)
    result.requires_grad = requires_grad
    return result
