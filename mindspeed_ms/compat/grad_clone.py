"""Autograd paths that reach MindSpore's ``Clone`` kernel, which the CPU backend does not have.

MindSpore's autograd engine clones a gradient before it keeps it when the same gradient tensor is also handed to
another consumer: ``add``'s backward gives its one ``dout`` to both operands, so ``a + c`` with both operands
requiring grad and a leaf among them fails at ``backward()`` ("The kernel Clone unregistered"), as does the
gradient a ``retain_grad()`` tensor keeps while passing it on. ``clamp_`` calls ``InplaceClampScalar``, which clones
on CPU even outside autograd.

- :func:`add_wrapper`: when both tensor operands require grad, each enters the add through a view of itself (no
  copy, same memory): the views' backward hands each branch a gradient tensor of its own, so a leaf at the end of
  it (directly, or through ops whose backward passes the gradient on unchanged: ``clone``, ``x + 0``) is not handed
  a shared one. Values, dtype and gradients are exactly PyTorch's; nothing changes when at most one operand
  requires grad.
- :func:`retain_grad`: a tensor hook keeps a copy of the gradient (accumulated over backward passes, as PyTorch);
  :func:`register_hook_wrapper` keeps that hook behind every other hook of the tensor (PyTorch keeps the gradient
  the tensor's hooks return: tests/conformance/cases/ops_autograd_graph.py ``hooks_order``).
- :func:`clamp_`: the clamp is computed out of place and written into ``self`` through its views.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

from mindspeed_ms.compat.errors import GradDTypeError, RetainGradError
from mindspeed_ms.compat.inplace import write_back
from mindspeed_ms.compat.inplace_checks import check_inplace
from mindspeed_ms.engine import passthrough

__all__ = ["GradDTypeError", "RetainGradError", "add_wrapper", "retain_grad", "retains_grad", "grad", "clamp_",
           "requires_grad_wrapper", "register_hook_wrapper"]

_NOT_RETAINED = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                 "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                 "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.")


def requires_grad_wrapper(requires_grad_: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``Tensor.requires_grad_()`` refuse integer and bool tensors, as PyTorch does (MSAdapter accepts them)."""

    @functools.wraps(requires_grad_)
    def checked(self: Any, requires_grad: bool = True) -> Any:
        if requires_grad and not (self.is_floating_point() or self.is_complex()):
            raise GradDTypeError(str(self.dtype))
        return requires_grad_(self, requires_grad)

    return checked


def add_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.__add__`` / ``Tensor.add`` / ``torch.add`` so that backward does not need ``Clone``.

    Only calls where both operands are tensors requiring grad change (two views more); the check costs ~5 us.
    """
    from mindspore import Tensor, ops

    @functools.wraps(op)
    def add(self: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(other, Tensor) and isinstance(self, Tensor) and self.requires_grad and other.requires_grad:
            # ``x.view(x.shape)`` as MSAdapter computes it (a reshape to the same shape, naming its base), without
            # the wrappers in front of ``Tensor.view``: a view to a tensor's own shape is never refused
            left, right = ops.reshape(self, list(self._shape)), ops.reshape(other, list(other._shape))
            left._base, right._base = self, other
            return op(left, right, *args, **kwargs)
        return op(self, other, *args, **kwargs)

    return add


def retain_grad(self: Any) -> None:
    """``Tensor.retain_grad``: a non-leaf tensor keeps its gradient in ``.grad`` (accumulated), a leaf is unchanged.

    Raises:
        RetainGradError: ``self`` does not require grad (a ``RuntimeError``, as PyTorch's).
    """
    if not self.requires_grad:
        raise RetainGradError
    if self.is_leaf or getattr(self, "_mindspeed_retains_grad", False):
        return

    def keep(grad: Any) -> None:
        previous = self._grad
        self._grad = grad.clone() if previous is None else previous + grad

    self._mindspeed_retain_handle = self.register_hook(keep)
    self._mindspeed_retain_hook = keep
    self._mindspeed_retains_grad = True


def register_hook_wrapper(register_hook: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.register_hook``: on a tensor that retains its gradient, the hook keeping it moves behind the new
    hook, so ``.grad`` is the gradient after every tensor hook, as in PyTorch (its retains_grad hook runs last)."""

    @functools.wraps(register_hook)
    def register(self: Any, hook: Any) -> Any:
        handle = register_hook(self, hook)
        keep = getattr(self, "_mindspeed_retain_hook", None)
        if keep is not None:
            self._mindspeed_retain_handle.remove()
            self._mindspeed_retain_handle = register_hook(self, keep)
        return handle

    return register


def _retains_grad(self: Any) -> bool:
    return bool(getattr(self, "_mindspeed_retains_grad", False))


retains_grad = property(_retains_grad, doc="True for a non-leaf tensor after retain_grad().")


def _warn_not_retained(frames: int) -> None:
    # PyTorch's warning, attributed to the code that read ``.grad`` (``frames``: the reader's own Python frames)
    warnings.warn(_NOT_RETAINED, UserWarning, stacklevel=2 + frames)


#: ``Tensor.grad``: ``_grad``, with PyTorch's warning for a non-leaf that requires grad and does not retain it.
#: ``_is_leaf``/``_requires_grad`` are what MSAdapter's ``is_leaf`` and ``requires_grad`` properties read. Reader
#: and writer are C objects where mindspeed_ms.engine's pass-through wrappers are built (hundreds of reads a
#: step), the same in Python elsewhere.
grad = property(passthrough.grad_read("_grad", "_is_leaf", "_requires_grad", "_mindspeed_retains_grad",
                                      _warn_not_retained),
                passthrough.attr_write("_grad"), doc="The gradient computed for this tensor (leaf, or retain_grad()).")


def clamp_(self: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - PyTorch's parameter names
    """``Tensor.clamp_``: clamp out of place, write the result into ``self`` (and its base); return ``self``."""
    from mindspore import ops

    check_inplace("clamp_", self, *(bound for bound in (min, max) if bound is not None))
    from mindspeed_ms.compat.ieee_special import clamp_repair

    return write_back("clamp_", self, clamp_repair(self, min, max, ops.clamp(self, min, max)))
