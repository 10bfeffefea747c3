"""Integer and bool results outside autograd, as in PyTorch.

PyTorch records no history for a tensor that is not floating or complex: ``y > 0``, ``y.long()``,
``y.argmax(1)``, ``y.nonzero()`` of a ``y`` that requires grad have ``requires_grad`` False, no ``grad_fn``, and are
leaves. MindSpore's autograd gives every op output a graph node when an input requires grad, whatever the output's
dtype (``<Greater>``, ``<Cast>``, ``<Argmax>``), and the node travels: an in-place write by such a mask or index
(``t.masked_fill_(mask, 0)``, ``t.scatter_(1, index, v)``, ``t.index_add_``) makes a float target that required
nothing record, ``mask.float()`` requires grad, and a write into a view of a buffer raised InPlaceOnViewError where
PyTorch is fine.

No single Python point sees every op's result (MindSpore's ops return from C++), so the ops that turn a float tensor
into an integer or bool one are wrapped: :func:`outside_autograd` detaches an integer or bool result that carries a
graph node (``pyboost_detach``: an alias of the same memory, no kernel). Once those results are plain, everything
computed from them is too. The common call pays one attribute read of the result (no grad: nothing more).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.errors import GradDTypeError
from mindspeed_ms.compat.inplace_checks import FLOATING, category

__all__ = ["GradDTypeError", "like_wrapper", "outside_autograd", "plain", "tensor_factory_wrapper"]

#: MindSpore's detach (``Tensor.detach`` without the wrappers in front of it), resolved on first use
_DETACH: list[Callable[[Any], Any]] = []


def _detach(tensor: Any) -> Any:
    if not _DETACH:
        from mindspore._c_expression import pyboost_detach

        _DETACH.append(pyboost_detach)
    return _DETACH[0](tensor)


def plain(value: Any) -> Any:
    """Return ``value`` with every integer or bool tensor in it (itself, or the items of a tuple or list) taken out of
    autograd; float and complex tensors and everything else unchanged (the same object when nothing changed)."""
    if getattr(value, "_requires_grad", False):
        return _detach(value) if category(value) < FLOATING else value
    if isinstance(value, (tuple, list)) and value:
        items = [plain(item) for item in value]
        if all(new is old for new, old in zip(items, value)):
            return value
        if hasattr(value, "_fields"):  # a namedtuple
            return type(value)(*items)
        return type(value)(items)
    return value


def outside_autograd(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an op whose result may be an integer or bool tensor computed from a float one: that result is a leaf
    without grad, as PyTorch's (:func:`plain`)."""

    @functools.wraps(op)
    def integral(*args: Any, **kwargs: Any) -> Any:
        out = op(*args, **kwargs)
        if getattr(out, "_requires_grad", False):
            return _detach(out) if category(out) < FLOATING else out
        if isinstance(out, (tuple, list)):
            return plain(out)
        return out

    return integral


def tensor_factory_wrapper(factory: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.tensor``: ``requires_grad=True`` of an integer or bool result raises as PyTorch does (MSAdapter
    sets the flag on any dtype; the other factories go through the ``requires_grad`` setter, which refuses it)."""

    @functools.wraps(factory)
    def checked(*args: Any, **kwargs: Any) -> Any:
        out = factory(*args, **kwargs)
        if kwargs.get("requires_grad") and category(out) < FLOATING:
            raise GradDTypeError(str(out.dtype))
        return out

    return checked


def like_wrapper(factory: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.zeros_like``/``ones_like``/``empty_like``: a new tensor, a leaf that requires grad only when
    ``requires_grad=True`` asks for it (MindSpore recorded it as computed from ``input``: ``torch.zeros_like(param)``
    had a ``grad_fn``, ``requires_grad`` True, in every dtype)."""

    @functools.wraps(factory)
    def fresh(*args: Any, **kwargs: Any) -> Any:
        requires_grad = kwargs.pop("requires_grad", None)
        out = factory(*args, **kwargs)
        if getattr(out, "_requires_grad", False):
            out = _detach(out)
        if requires_grad:
            out.requires_grad_(True)  # refuses an integer or bool tensor, as PyTorch does
        return out

    return fresh
