"""PyTorch's fused AdamW entry points off the NPU: ``torch._fused_adamw_`` and ``torch_npu.npu_apply_fused_adamw_v2``.

MSAdapter's ``torch._fused_adamw_`` calls the Ascend kernel ``npu_apply_fused_adamw_v2``, which has no CPU kernel
("The kernel AdamW unregistered"); MindSpeed's ``mindspeed.core.optimizer.adamw.AdamW`` calls it per parameter. Both
are rebuilt here from MindSpore functions, with the moment update of :func:`mindspeed_ms.compat.optim.lerp` (the
same rule, bit for bit, as the replaced ``torch.optim.AdamW.step``).
"""

from __future__ import annotations

import math
from typing import Any

from mindspeed_ms.compat.errors import UnsupportedOptimizerFeatureError
from mindspeed_ms.compat.optim import lerp

__all__ = ["fused_adamw_", "npu_apply_fused_adamw_v2"]


def _fused_update(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any, count: int, *,
                  lr: float, beta1: float, beta2: float, weight_decay: float, eps: float, amsgrad: bool,
                  maximize: bool) -> None:
    """One AdamW update of one parameter, every state tensor written in place (PyTorch's fused AdamW rule)."""
    from mindspore import mint, ops

    if maximize:
        grad = mint.neg(grad)
    value = ops.mul(param, 1 - lr * weight_decay) if weight_decay != 0 else param
    first = lerp(exp_avg, grad, 1 - beta1)
    second = mint.add(ops.mul(exp_avg_sq, beta2), mint.mul(ops.mul(grad, 1 - beta2), grad))
    exp_avg.copy_(first)
    exp_avg_sq.copy_(second)
    if amsgrad:
        second = mint.maximum(max_exp_avg_sq, second)
        max_exp_avg_sq.copy_(second)
    step_size = lr / (1 - beta1 ** count)
    denom = mint.add(mint.div(mint.sqrt(second), math.sqrt(1 - beta2 ** count)), eps)
    param.copy_(mint.add(value, mint.div(ops.mul(first, -step_size), denom)))


def _step_count(step: Any) -> int:
    count = step if isinstance(step, (int, float)) else step.item()
    if count != int(count) or count < 1:
        raise ValueError(f"fused AdamW: the step must be a positive whole number (incremented before the update), "
                         f"got {count!r}")
    return int(count)


def fused_adamw_(params: Any = None, grads: Any = None, exp_avgs: Any = None, exp_avg_sqs: Any = None,
                 max_exp_avg_sqs: Any = None, state_steps: Any = None, *, lr: Any, beta1: float, beta2: float,
                 weight_decay: float, eps: float, amsgrad: bool, maximize: bool, grad_scale: Any = None,
                 found_inf: Any = None) -> None:
    """Update parameters and AdamW state in place, as ``torch._fused_adamw_`` does.

    MSAdapter's version calls the Ascend kernel ``npu_apply_fused_adamw_v2`` (no CPU kernel: "The kernel
    AdamW unregistered"); MindSpeed's ``mindspeed.core.optimizer.adamw.AdamW`` calls it per parameter.
    The update is PyTorch's AdamW rule with the step already incremented by the caller: ``param *= 1 -
    lr * weight_decay``; ``exp_avg.lerp_(grad, 1 - beta1)``; ``exp_avg_sq = beta2 * exp_avg_sq + (1 -
    beta2) * grad**2`` (its running maximum with ``amsgrad``); ``param -= lr / (1 - beta1**t) * exp_avg /
    (sqrt(v) / sqrt(1 - beta2**t) + eps)``.

    Raises:
        UnsupportedOptimizerFeatureError: ``grad_scale`` or ``found_inf`` (the AMP grad-scaler path) given.
        ValueError: lists of different lengths, or a step that is not a positive whole number.
    """
    for option, value in (("grad_scale", grad_scale), ("found_inf", found_inf)):
        if value is not None:
            raise UnsupportedOptimizerFeatureError(
                "AdamW", f"torch._fused_adamw_({option}=...)",
                "unscaling gradients and skipping steps with infinite gradients inside the fused update are not "
                "implemented; unscale before the step (megatron's optimizers do) and pass neither")
    params, grads, exp_avgs, exp_avg_sqs = list(params or ()), list(grads or ()), list(exp_avgs or ()), \
        list(exp_avg_sqs or ())
    steps, maxima = list(state_steps or ()), list(max_exp_avg_sqs or ())
    lengths = {len(params), len(grads), len(exp_avgs), len(exp_avg_sqs), len(steps)}
    if len(lengths) != 1 or (amsgrad and len(maxima) != len(params)):
        raise ValueError(f"torch._fused_adamw_: expected lists of one length, got params {len(params)}, grads "
                         f"{len(grads)}, exp_avgs {len(exp_avgs)}, exp_avg_sqs {len(exp_avg_sqs)}, state_steps "
                         f"{len(steps)}, max_exp_avg_sqs {len(maxima)} (amsgrad={amsgrad})")
    import msadapter

    with msadapter.no_grad():
        for index, param in enumerate(params):
            _fused_update(param, grads[index], exp_avgs[index], exp_avg_sqs[index],
                          maxima[index] if amsgrad else None, _step_count(steps[index]), lr=float(lr),
                          beta1=float(beta1), beta2=float(beta2), weight_decay=float(weight_decay), eps=float(eps),
                          amsgrad=amsgrad, maximize=maximize)


def npu_apply_fused_adamw_v2(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any,
                             state_step: Any, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                             weight_decay: float = 0.0, eps: float = 1e-8, amsgrad: bool = False,
                             maximize: bool = False) -> bool:
    """Update one parameter and its AdamW state in place (``torch_npu.npu_apply_fused_adamw_v2`` off the NPU).

    Same rule as :func:`fused_adamw_`; ``state_step`` is the step count after increment.

    Returns:
        ``True``, as MSAdapter's version.
    """
    fused_adamw_([param], [grad], [exp_avg], [exp_avg_sq], [max_exp_avg_sq] if amsgrad else [], [state_step],
                 lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps, amsgrad=amsgrad,
                 maximize=maximize)
    return True
