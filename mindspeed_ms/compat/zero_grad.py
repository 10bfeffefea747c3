"""``torch.optim.Optimizer.zero_grad`` and ``torch.nn.Module.zero_grad`` with PyTorch's ``set_to_none`` semantics."""

from __future__ import annotations

from typing import Any

__all__ = ["optimizer_zero_grad", "module_zero_grad"]


def _reset_grads(params: Any, set_to_none: bool) -> None:
    # torch.optim.Optimizer.zero_grad / torch.nn.Module.zero_grad, step for step.
    for param in params:
        grad = param.grad
        if grad is None:
            continue
        if set_to_none:
            param.grad = None
            continue
        if grad.grad_fn is not None:
            grad = grad.detach()
            param.grad = grad
        else:
            grad.requires_grad_(False)
        grad.zero_()


def optimizer_zero_grad(self: Any, set_to_none: bool = True) -> None:
    """Reset the gradients of the optimizer's parameters as ``torch.optim.Optimizer.zero_grad`` does.

    MSAdapter's version does nothing with ``set_to_none=False``, so the next step reuses the stale
    gradients (added to by the next backward).

    Args:
        set_to_none: set each ``.grad`` to None (default) instead of filling it with zeros in place.
    """
    _reset_grads((p for group in self.param_groups for p in group["params"]), set_to_none)


def module_zero_grad(self: Any, set_to_none: bool = True) -> None:
    """Reset the gradients of the module's parameters as ``torch.nn.Module.zero_grad`` does.

    MSAdapter's version sets every ``.grad`` to None whatever ``set_to_none`` says.

    Args:
        set_to_none: set each ``.grad`` to None (default) instead of filling it with zeros in place.
    """
    _reset_grads(self.parameters(), set_to_none)
