"""Gradients PyTorch's OpInfo samples found lost (scripts/opinfo_sweep.py; cases in
tests/conformance/cases/fix_opinfo_grads.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13, silently:

- ``torch.clone(x)`` (the function; ``x.clone()`` is right) is ``copy.deepcopy`` off Ascend: the copy is a new
  leaf that requires grad, so nothing reached ``x.grad`` (PyTorch: the identity's gradient). It runs ``x.clone()``.
- ``torch.masked_fill(x, mask, value)`` / ``x.masked_fill(mask, value)`` with a 0-d ``value`` tensor that requires
  grad gave ``value`` no gradient (PyTorch: the sum of the gradient at the masked places). It is computed as
  ``value.where(mask, x)`` then, whose gradient is that.
- ``torch.ceil(x)`` / ``torch.round(x)`` (and the methods) of a tensor that requires grad returned a result without
  a graph: ``x.grad`` stayed None (PyTorch: zeros; ``floor``/``trunc`` were right). The result is then selected
  by ``where`` over ``x``, whose gradient is zero everywhere.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["clone_graph_wrapper", "masked_fill_value_grad_wrapper", "zero_gradient_wrapper"]


def clone_graph_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.clone(input, *, memory_format=...)``: ``input.clone(...)``, recorded by autograd."""

    @functools.wraps(op)
    def clone_as_torch(input: Any, **kwargs: Any) -> Any:
        method = getattr(input, "clone", None)
        if method is None or not hasattr(input, "shape"):
            return op(input, **kwargs)
        return method(**kwargs)

    return clone_as_torch


def masked_fill_value_grad_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``masked_fill(input, mask, value)``: a 0-d ``value`` tensor that requires grad receives its gradient."""

    @functools.wraps(op)
    def masked_fill_as_torch(input: Any, mask: Any, value: Any) -> Any:
        if (getattr(value, "requires_grad", False) and len(getattr(value, "shape", (1,))) == 0
                and str(getattr(mask, "dtype", "")).lower().endswith("bool")
                and len(getattr(mask, "shape", ())) <= len(getattr(input, "shape", ())) and _grad_enabled()):
            return value.to(input.dtype).where(mask, input)
        return op(input, mask, value)

    return masked_fill_as_torch


def _grad_enabled() -> bool:
    import msadapter

    return bool(msadapter.is_grad_enabled())


def zero_gradient_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a step function (``ceil``, ``round``): an input that requires grad receives PyTorch's zero gradient."""

    @functools.wraps(op)
    def step_as_torch(input: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(input, "requires_grad", False) or kwargs.get("out") is not None or not _grad_enabled():
            return op(input, *args, **kwargs)
        result = op(input.detach(), *args, **kwargs)
        if getattr(result, "shape", None) != input.shape or result.dtype != input.dtype:
            return op(input, *args, **kwargs)
        return _select_all(result, input)

    return step_as_torch


def _select_all(result: Any, input: Any) -> Any:
    import msadapter

    return msadapter.where(msadapter.ones_like(input, dtype=msadapter.bool), result, input)
