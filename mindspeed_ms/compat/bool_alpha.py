"""``Tensor.add_`` of bool tensors with ``alpha=False`` (scripts/opinfo_sweep.py; case in
tests/conformance/cases/fix_bool_alpha.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13: ``x.add_(y, alpha=False)`` of bool tensors
ignored ``alpha`` (``x | y``), silently; PyTorch: ``x`` unchanged (``torch.add`` and ``x.add`` were right). ``y`` is
masked to False first, so broadcasting is still checked by the op.

Every ``Tensor.add_`` of a training step comes through this wrap (DDP's ``main_grad.add_(grad)``, 30 a step of the
tiny example): where the op it wraps is :func:`mindspeed_ms.compat.inplace_ops.add_` (whose first step, for a call
without ``alpha``, is :func:`~mindspeed_ms.compat.inplace.view_adder`'s host sum), directly or through dtype forks
that pass float32 on, that sum is asked in C in front of this wrap for float32 tensors
(:func:`~mindspeed_ms.compat.inplace.view_adder_front`): the same sum, without two Python frames.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["bool_alpha_inplace_add_wrapper"]


def bool_alpha_inplace_add_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.add_(other, *, alpha)``: a bool tensor with ``alpha=False`` adds nothing (as PyTorch)."""

    @functools.wraps(op)
    def add_as_torch(self: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        alpha = kwargs.get("alpha")
        if (isinstance(alpha, bool) and not alpha and not args and hasattr(other, "shape")
                and str(getattr(self, "dtype", "")).lower().endswith("bool")):
            rest = {key: value for key, value in kwargs.items() if key != "alpha"}
            return op(self, other.logical_and(False), **rest)
        return op(self, other, *args, **kwargs)

    from mindspeed_ms.compat import inplace, inplace_ops

    return inplace.view_adder_front(op, add_as_torch, inplace_ops.add_)
