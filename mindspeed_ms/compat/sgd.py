"""PyTorch's SGD update rule for MSAdapter's ``torch.optim.SGD``.

MSAdapter 0.5.0b1's ``SGD.step`` hands each parameter to MindSpore's ``SGD`` kernel with a momentum accumulator
and a "first step" flag it creates afresh at every step: the momentum buffer never outlives the step (every step is
the first one, ``buf = grad``), so ``momentum`` has no effect and ``state`` holds no ``momentum_buffer``.
Megatron-LM's ``--optimizer sgd`` (``--sgd-momentum 0.9`` by default) then trained differently from PyTorch from
the second iteration on (``scripts/real_megatron_lm_parity.sh`` row ``sgd-clip``).

``sgd_step`` replaces ``step`` and follows ``torch.optim.sgd._single_tensor_sgd`` operation for operation: gradient
negated for ``maximize``; ``grad + weight_decay * param``; with ``momentum``, the buffer is a copy of that gradient
at the first step and ``momentum * buf + (1 - dampening) * grad`` after; Nesterov adds ``momentum * buf`` to the
gradient, else the buffer is the update; ``param - lr * update``. As in :mod:`mindspeed_ms.compat.optim`, values
are computed out of place with MindSpore functions, the buffer is rebound in the state (PyTorch's key,
``momentum_buffer``) and the parameter written with ``copy_``.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["sgd_step"]


def sgd_step(self: Any, closure: Callable[[], Any] | None = None, *, grads: Any = None) -> Any:
    """Perform one step of ``torch.optim.SGD`` with PyTorch's update rule.

    Args:
        closure: reevaluates the model and returns the loss (run with gradients enabled).
        grads: MSAdapter's parameter, ignored as MSAdapter ignores it (the gradients are ``p.grad``).

    Returns:
        The closure's loss, or ``None``.
    """
    del grads
    import msadapter
    from mindspore import mint, ops

    loss = None
    if closure is not None:
        with msadapter.enable_grad():
            loss = closure()
    with msadapter.no_grad():
        for group in self.param_groups:
            lr = float(group["lr"])
            momentum = float(group.get("momentum", 0.0))
            dampening = float(group.get("dampening", 0.0))
            weight_decay = float(group.get("weight_decay", 0.0))
            nesterov = bool(group.get("nesterov", False))
            maximize = bool(group.get("maximize", False))
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if maximize:
                    grad = mint.neg(grad)
                if weight_decay != 0:
                    grad = mint.add(grad, param, alpha=weight_decay)
                if momentum != 0:
                    state = self.state[param]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = grad.clone()  # a copy: megatron zeroes its gradient buffer in place
                    else:
                        buf = mint.add(ops.mul(buf, momentum), grad, alpha=1 - dampening)
                    state["momentum_buffer"] = buf
                    grad = mint.add(grad, buf, alpha=momentum) if nesterov else buf
                param.copy_(mint.add(param, grad, alpha=-lr))
    return loss
