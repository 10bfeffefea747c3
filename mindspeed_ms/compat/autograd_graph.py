"""The autograd graph API the field calls beside ``backward`` (tests/conformance/cases/ops_autograd_graph.py).

Measured on MindSpore 2.7.1 + MSAdapter 0.5.0b1, against PyTorch 2.13:

- ``Variable._execution_engine.queue_callback`` (megatron's custom FSDP, MindSpeed's layerzero: the post-backward
  final callback) is missing: AttributeError. :func:`queue_callback` keeps the callbacks of the backward pass that
  runs (each call into the engine is one pass, a backward inside a backward its own) and
  :func:`engine_wrapper` runs them, in order, once the engine returned, as PyTorch's engine does; outside a
  backward it raises PyTorch's RuntimeError.
- ``Tensor.register_post_accumulate_grad_hook`` is missing: :func:`register_post_accumulate_grad_hook` puts the hook
  on the leaf's gradient accumulator (the node megatron's DDP hooks by
  ``param.expand_as(param).grad_fn.next_functions[0][0]``), which runs it after ``.grad`` was written.
- ``torch.autograd.graph.register_multi_grad_hook`` is a stub that takes no arguments (TypeError):
  :func:`register_multi_grad_hook` calls the hook once per backward with the gradients of every tensor ("all": as
  soon as all arrived, else at the end of the pass with None for the missing ones) or with the first one ("any").
- ``torch.autograd.graph.saved_tensors_hooks`` is a placeholder that never calls its pack / unpack hooks (MindSpeed's
  activation swapping and adaptive recompute rely on them): MindSpore's engine saves its tensors in C++, out of
  Python's reach, so :func:`saved_tensors_hooks_enter` refuses it loudly instead of silently doing nothing.
- A backward through a view whose base was written in place after the view was taken (``p = y[1]; y.mul_(3);
  p.sum().backward()``; PyTorch rebases the view's history on the write) stops inside MindSpore's engine with an
  internal RuntimeError ("The pointer[base_shape] is null"): :func:`engine_wrapper` raises
  :class:`~mindspeed_ms.errors.ViewRebaseError` instead, which says what to do.
- A leaf whose gradient arrives unchanged from a gradient the caller passed in (``y = x + c``;
  ``backward(y, g)``) keeps the caller's tensor itself as ``.grad``: freeing ``g`` afterwards
  (``g.untyped_storage().resize_(0)``, as MindSpeed's fb-overlap does after each partial backward) frees
  ``x.grad`` with it, and later reads see whatever the memory then holds (MindSpeed-LLM's DeepSeek-V3 with
  dualpipev: NaN / 1e35 gradients). PyTorch's gradient accumulator keeps a tensor the caller still holds only
  as a copy; :func:`engine_wrapper` hands the engine copies of the caller's gradients when ``.grad`` is written
  (``backward``, not ``autograd.grad``) and no graph of the backward is built (``create_graph=False``; the
  gradients may still require grad: megatron's pipeline receive buffers do).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any, Callable

from mindspeed_ms.compat.errors import TorchRefusalError, UnsupportedOpOptionError, ViewRebaseError

__all__ = ["engine_wrapper", "static_engine_wrapper", "queue_callback", "register_post_accumulate_grad_hook",
           "register_multi_grad_hook", "saved_tensors_hooks_enter"]

#: one list per backward pass running (innermost last): the callbacks queued during it
_PASSES: list[list[Callable[[], None]]] = []


#: what MindSpore's engine says when it meets a view whose base was written in place after the view was taken
_VIEW_REBASE = "The pointer[base_shape] is null"


def engine_wrapper(run_backward: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a call into MindSpore's engine: the callbacks queued while it runs are run after it returned."""

    @functools.wraps(run_backward)
    def run(*args: Any, **kwargs: Any) -> Any:
        callbacks: list[Callable[[], None]] = []
        _PASSES.append(callbacks)
        try:
            result = run_backward(*_owned_gradients(args, kwargs), **kwargs)
            while callbacks:  # a callback may queue another one: it runs too
                callbacks.pop(0)()
        except RuntimeError as error:
            if _VIEW_REBASE in str(error):
                raise ViewRebaseError("torch.autograd.backward") from error
            raise
        finally:
            _PASSES.pop()
        return result

    return run


#: where the engine's ``run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs, allow_unreachable,
#: accumulate_grad)`` takes its gradients, ``create_graph`` and ``accumulate_grad`` when they come positionally
_GRADS_AT, _CREATE_GRAPH_AT, _ACCUMULATE_AT = 1, 3, 6


def _owned_gradients(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``args`` with the caller's gradients copied (``kwargs`` updated in place) when the pass writes ``.grad``."""
    accumulate = kwargs.get("accumulate_grad", args[_ACCUMULATE_AT] if len(args) > _ACCUMULATE_AT else True)
    create_graph = kwargs.get("create_graph", args[_CREATE_GRAPH_AT] if len(args) > _CREATE_GRAPH_AT else False)
    if not accumulate or create_graph:  # a double backward's gradients are part of the graph it builds
        return args
    positional = "grad_tensors" not in kwargs
    given = args[_GRADS_AT] if positional and len(args) > _GRADS_AT else kwargs.get("grad_tensors")
    if given is None:
        return args
    owned = tuple(grad.detach().clone() if hasattr(grad, "untyped_storage") else grad for grad in given)
    if not positional:
        kwargs["grad_tensors"] = owned
        return args
    return (*args[:_GRADS_AT], owned, *args[_GRADS_AT + 1:])


def static_engine_wrapper(run_backward: Callable[..., Any]) -> Any:
    """:func:`engine_wrapper` for ``ImperativeEngine.run_backward`` (a class attribute called without ``self``)."""
    return staticmethod(engine_wrapper(run_backward))


def queue_callback(self: Any, callback: Callable[[], None]) -> None:
    """``Variable._execution_engine.queue_callback(callback)``: run ``callback`` when this backward pass ends."""
    if not _PASSES:
        raise TorchRefusalError("torch.autograd.Variable._execution_engine.queue_callback",
                                "Final callbacks can only be installed during backward pass.")
    _PASSES[-1].append(callback)


def register_post_accumulate_grad_hook(self: Any, hook: Callable[[Any], None]) -> Any:
    """``Tensor.register_post_accumulate_grad_hook(hook)``: ``hook(tensor)`` after ``tensor.grad`` was written."""
    if not self.requires_grad:
        raise TorchRefusalError("Tensor.register_post_accumulate_grad_hook",
                                "cannot register a hook on a tensor that doesn't require gradient")
    if not self.is_leaf:
        raise TorchRefusalError("Tensor.register_post_accumulate_grad_hook",
                                "post accumulate grad hooks cannot be registered on non-leaf tensors")
    accumulator = self.expand_as(self).grad_fn.next_functions[0][0]
    tensor = weakref.ref(self)  # the node lives as long as the tensor: no reference back to it

    def run(*unused: Any) -> None:
        leaf = tensor()
        if leaf is not None:
            hook(leaf)

    return accumulator.register_hook(run)


class _Handles:
    """The handle :func:`register_multi_grad_hook` returns: ``remove()`` removes every tensor's hook."""

    def __init__(self, handles: list[Any]) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def register_multi_grad_hook(tensors: Any = (), fn: Callable[[Any], Any] | None = None, *, mode: str = "all") -> Any:
    """``torch.autograd.graph.register_multi_grad_hook``: ``fn(grads)`` once per backward pass ("all"), or
    ``fn(grad)`` with the first gradient computed ("any"). (``tensors`` and ``fn`` have defaults only because
    MSAdapter's stub takes no argument and the registry's static check compares the two.)"""
    if fn is None:
        raise TypeError("register_multi_grad_hook() missing 1 required positional argument: 'fn'")
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    state: dict[str, Any] = {"grads": None, "fired": False}

    def finish() -> None:
        grads, state["grads"], state["fired"] = state["grads"], None, False
        if mode == "all" and grads is not None:
            fn(grads)

    def hook(index: int, grad: Any) -> None:
        if state["grads"] is None and not state["fired"]:
            state["grads"] = [None] * len(tensors)
            queue_callback(None, finish)
        if mode == "any":
            if not state["fired"]:
                state["fired"] = True
                state["grads"] = None
                fn(grad)
            return
        grads = state["grads"]
        if grads is None:
            return
        grads[index] = grad
        if all(g is not None for g in grads):
            state["grads"] = None
            fn(grads)

    return _Handles([t.register_hook(functools.partial(hook, i)) for i, t in enumerate(tensors)])


def saved_tensors_hooks_enter(enter: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``saved_tensors_hooks.__enter__``: refused for the class itself (see the module's docstring); MSAdapter's
    own subclasses (its non-reentrant checkpoint's hooks) keep their behaviour."""
    from msadapter.autograd.graph import saved_tensors_hooks

    @functools.wraps(enter)
    def refuse(self: Any) -> Any:
        if type(self) is saved_tensors_hooks:
            raise UnsupportedOpOptionError(
                "torch.autograd.graph.saved_tensors_hooks", "a pack / unpack hook",
                "never called on this backend (MindSpore's engine keeps the tensors it saves in C++): run without "
                "the feature that installs it (MindSpeed's swap-attention, adaptive recompute or adaptive memory)")
        return enter(self)

    return refuse
