"""Gradients PyTorch's OpInfo samples found lost (scripts/opinfo_sweep.py; cases in
tests/conformance/cases/fix_opinfo_grads.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13, silently:

- ``torch.clone(x)`` (the function; ``x.clone()`` is right) is ``copy.deepcopy`` off Ascend: the copy is a new
  leaf that requires grad, so nothing reached ``x.grad`` (PyTorch: the identity's gradient). It runs ``x.clone()``.
- ``torch.masked_fill(x, mask, value)`` / ``x.masked_fill(mask, value)`` with a 0-d ``value`` tensor that requires
  grad gave ``value`` no gradient (PyTorch: the sum of the gradient at the masked places). It is computed as
  ``value.where(mask, x)`` then, whose gradient is that.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["clone_graph_wrapper", "masked_fill_value_grad_wrapper"]


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
