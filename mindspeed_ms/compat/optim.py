"""PyTorch's Adam and AdamW update rule for MSAdapter's ``torch.optim.Adam`` / ``torch.optim.AdamW``.

MSAdapter 0.5.0b1 hands the update to MindSpore's ``ApplyAdam`` kernel (``ops.optim.raw_adam``),
which adds ``eps`` to ``sqrt(v)`` before the bias correction: the effective epsilon is
``eps / sqrt(1 - beta2**t)`` (~3.2e-7 instead of 1e-8 after step 1), so weights drift from a
PyTorch run by ~1e-5 per step. Its constructors also reject PyTorch's ``foreach``/``capturable``/
``differentiable``/``fused`` arguments, its ``__setstate__`` raises ``KeyError`` on a state dict
saved by MSAdapter itself, and its ``step`` fails on parameters without a gradient.

The functions here replace ``__init__``, ``__setstate__`` and ``step`` of both classes. ``step``
follows ``torch.optim.adam._single_tensor_adam`` operation for operation (the algorithm of the
torch.optim.Adam/AdamW documentation): gradient negated for ``maximize``; L2 weight decay added
to the gradient (Adam) or the parameter decayed by ``lr * weight_decay`` first (AdamW, and Adam
with ``decoupled_weight_decay=True``); ``exp_avg.lerp_(grad, 1 - beta1)``;
``exp_avg_sq * beta2 + (1 - beta2) * grad * grad``; ``max_exp_avg_sq = max(max_exp_avg_sq,
exp_avg_sq)`` for ``amsgrad``; ``denom = sqrt(v) / sqrt(1 - beta2**t) + eps``;
``param += -lr / (1 - beta1**t) * exp_avg / denom``.

Everything is computed out of place with MindSpore functions: on MindSpore's CPU backend
``add_``/``mul_``/``+=`` leave the tensor unchanged, and MSAdapter's ``Tensor.__truediv__`` goes
through NumPy there (a device synchronisation per division). The state tensors are rebound in
the state dict and the parameter is written with ``Parameter.copy_`` (in place on every backend
for a tensor that owns its storage; a parameter that is a view would not be written on CPU).
The state keeps PyTorch's layout (``step`` a float32 scalar tensor, ``exp_avg``, ``exp_avg_sq``,
``max_exp_avg_sq``), so ``state_dict()``/``load_state_dict()`` and megatron's checkpoint code
(``state["step"].item()``) work.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from mindspeed_ms.compat.errors import UnsupportedOptimizerFeatureError

__all__ = [
    "UnsupportedOptimizerFeatureError",
    "lerp",
    "adam_init",
    "adamw_init",
    "adam_setstate",
    "adam_step",
    "adamw_step",
]

#: Group options of PyTorch's Adam beyond MSAdapter's, with PyTorch's defaults.
_OPTION_DEFAULTS = {"foreach": None, "capturable": False, "differentiable": False, "fused": None,
                    "decoupled_weight_decay": False}


def lerp(start: Any, end: Any, weight: float) -> Any:
    """``start.lerp(end, weight)`` for a float ``weight``, as PyTorch's CPU kernel computes it, from fast kernels.

    PyTorch: ``start + weight * (end - start)`` for ``|weight| < 0.5``, else ``end - (end - start) * (1 - weight)``.
    ``mint.lerp`` gives the same values (bit-identical: tests/test_compat_optim.py) but its CPU kernel is 20-100x
    slower than a multiplication on large tensors (311 ms against 2.7 ms over 6.4M floats under load).
    """
    import mindspore.ops as ops

    difference = ops.sub(end, start)
    if abs(weight) < 0.5:
        return ops.add(start, ops.mul(difference, weight))
    return ops.sub(end, ops.mul(difference, 1 - weight))


def _validate(name: str, lr: Any, betas: Any, eps: float, weight_decay: float, options: dict[str, Any]) -> None:
    # The checks and messages of torch.optim.Adam.__init__ that apply here.
    if hasattr(lr, "numel") and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if options["fused"] and options["foreach"]:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    _check_options(name, options)


def _check_options(name: str, group: dict[str, Any]) -> None:
    # foreach, fused and capturable choose how PyTorch computes the same update (batched kernels,
    # one fused kernel, step kept on the device for CUDA graphs); the result is the same up to
    # rounding, so they are accepted. differentiable asks for autograd through the update itself.
    if group.get("differentiable"):
        raise UnsupportedOptimizerFeatureError(
            name, "differentiable=True",
            "the update is computed under no_grad and written into the parameters with copy_, so it "
            "cannot be differentiated; use differentiable=False")


def _init(self: Any, name: str, params: Any, lr: Any, betas: Any, eps: float, weight_decay: float,
          amsgrad: bool, options: dict[str, Any]) -> None:
    from msadapter.optim.optimizer import Optimizer

    _validate(name, lr, betas, eps, weight_decay, options)
    defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, **options)
    Optimizer.__init__(self, params, defaults)


def adam_init(self: Any, params: Any, lr: Any = 1e-3, betas: tuple[Any, Any] = (0.9, 0.999), eps: float = 1e-8,
              weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
              maximize: bool = False, capturable: bool = False, differentiable: bool = False,
              fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
    """Construct ``torch.optim.Adam`` with PyTorch's signature and defaults.

    Raises:
        ValueError: a hyperparameter out of range (PyTorch's messages).
        UnsupportedOptimizerFeatureError: ``differentiable=True``.
    """
    options = dict(foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                   fused=fused, decoupled_weight_decay=decoupled_weight_decay)
    _init(self, "Adam", params, lr, betas, eps, weight_decay, amsgrad, options)


def adamw_init(self: Any, params: Any, lr: Any = 1e-3, betas: tuple[Any, Any] = (0.9, 0.999), eps: float = 1e-8,
               weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
               foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
               fused: bool | None = None) -> None:
    """Construct ``torch.optim.AdamW`` with PyTorch's signature and defaults.

    Raises:
        ValueError: a hyperparameter out of range (PyTorch's messages).
        UnsupportedOptimizerFeatureError: ``differentiable=True``.
    """
    options = dict(foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                   fused=fused, decoupled_weight_decay=True)
    _init(self, "AdamW", params, lr, betas, eps, weight_decay, amsgrad, options)


def adam_setstate(self: Any, state: dict[str, Any]) -> None:
    """Restore the optimizer as PyTorch's ``Adam.__setstate__`` does (used by ``load_state_dict``).

    MSAdapter's version reads ``group["capturable"]``, absent from the groups MSAdapter itself
    saves, and raises ``KeyError``. Groups get PyTorch's option defaults; a plain-number ``step``
    (MSAdapter's layout) becomes a float32 scalar tensor (PyTorch's layout).
    """
    import mindspore
    from msadapter.optim.optimizer import Optimizer

    Optimizer.__setstate__(self, state)
    decoupled = type(self).__name__ == "AdamW"
    for group in self.param_groups:
        group.setdefault("amsgrad", False)
        group.setdefault("maximize", False)
        for option, default in _OPTION_DEFAULTS.items():
            group.setdefault(option, default)
        if decoupled:
            group["decoupled_weight_decay"] = True
        for param in group["params"]:
            param_state = self.state.get(param)
            if param_state and isinstance(param_state.get("step"), (int, float)):
                param_state["step"] = mindspore.tensor(float(param_state["step"]), dtype=mindspore.float32)


def _step(self: Any, name: str, closure: Callable[[], Any] | None, is_decoupled: bool) -> Any:
    import msadapter

    loss = None
    if closure is not None:
        with msadapter.enable_grad():
            loss = closure()
    from mindspeed_ms.compat.flat_adam import step_buckets

    with msadapter.no_grad():
        flat = step_buckets(self, is_decoupled)  # whole DDP buckets in one pass each (same rule)
        for group in self.param_groups:
            _check_options(name, group)
            if flat and all(map(flat.__contains__, map(id, group["params"]))):
                continue  # every parameter of the group updated with its bucket (one C-level pass)
            _step_group(self, name, group, flat, is_decoupled)
    return loss


def _step_group(self: Any, name: str, group: dict[str, Any], flat: set[int], is_decoupled: bool) -> None:
    """Update the parameters of ``group`` not in ``flat`` (the ids of those updated with their DDP bucket) one by
    one, as PyTorch's single-tensor Adam/AdamW does."""
    import mindspore
    import mindspore.mint as mint
    import mindspore.ops as ops

    lr = group["lr"]
    beta1, beta2 = group["betas"]
    lr, beta1, beta2 = float(lr), float(beta1), float(beta2)  # Tensor hyperparameters are allowed
    eps = group["eps"]
    weight_decay = group["weight_decay"]
    amsgrad = group["amsgrad"]
    maximize = group["maximize"]
    # AdamW always decouples, also in groups built by MSAdapter's own __init__ before patching.
    decoupled = is_decoupled or group.get("decoupled_weight_decay", False)
    for param in group["params"]:
        if id(param) in flat:  # updated with its bucket (before reading grad: one property call less)
            continue
        grad = param.grad
        if grad is None:
            continue
        state = self.state[param]
        if not state:
            if param.is_complex():
                raise UnsupportedOptimizerFeatureError(
                    name, f"complex parameter of dtype {param.dtype}",
                    "PyTorch updates complex parameters through view_as_real, which this update "
                    "does not implement")
            step = None
            count = 0
            exp_avg = ops.zeros_like(param)
            exp_avg_sq = ops.zeros_like(param)
        else:
            # Read every step, as PyTorch's _get_value does: the tensor may have been edited in place.
            step = state["step"]
            count = int(step) if isinstance(step, (int, float)) else int(step.item())
            exp_avg = state["exp_avg"]
            exp_avg_sq = state["exp_avg_sq"]
        count += 1
        if maximize:
            grad = mint.neg(grad)
        value = param
        if weight_decay != 0:
            if decoupled:
                value = ops.mul(param, 1 - lr * weight_decay)
            else:
                grad = mint.add(grad, param, alpha=weight_decay)
        exp_avg = lerp(exp_avg, grad, 1 - beta1)
        exp_avg_sq = mint.add(ops.mul(exp_avg_sq, beta2), mint.mul(ops.mul(grad, 1 - beta2), grad))
        if amsgrad:
            max_exp_avg_sq = state.get("max_exp_avg_sq")
            if max_exp_avg_sq is not None:
                exp_avg_sq_max = mint.maximum(max_exp_avg_sq, exp_avg_sq)
            else:  # max(0, v) is v: v >= 0
                exp_avg_sq_max = exp_avg_sq
            state["max_exp_avg_sq"] = second = exp_avg_sq_max
        else:
            second = exp_avg_sq
        step_size = lr / (1 - beta1 ** count)
        denom = mint.add(mint.div(mint.sqrt(second), math.sqrt(1 - beta2 ** count)), eps)
        param.copy_(mint.add(value, mint.div(ops.mul(exp_avg, -step_size), denom)))
        new_step = mindspore.tensor(float(count), dtype=mindspore.float32)
        if step is not None and hasattr(step, "copy_") and tuple(step.shape) == ():
            step.copy_(new_step)  # in place, as PyTorch's step_t += 1: aliases of the state see it
        else:  # each parameter owns its step tensor, as in PyTorch
            state["step"] = new_step
        state["exp_avg"] = exp_avg
        state["exp_avg_sq"] = exp_avg_sq


def adam_step(self: Any, closure: Callable[[], Any] | None = None, *, grads: Any = None) -> Any:
    """Perform one step of ``torch.optim.Adam`` with PyTorch's update rule.

    Args:
        closure: reevaluates the model and returns the loss (run with gradients enabled).
        grads: MSAdapter's parameter, ignored as MSAdapter ignores it (the gradients are ``p.grad``).

    Returns:
        The closure's loss, or ``None``.

    Raises:
        UnsupportedOptimizerFeatureError: a group with ``differentiable=True`` or a complex parameter.
    """
    del grads
    return _step(self, "Adam", closure, False)


def adamw_step(self: Any, closure: Callable[[], Any] | None = None, *, grads: Any = None) -> Any:
    """Perform one step of ``torch.optim.AdamW`` with PyTorch's update rule.

    Args:
        closure: reevaluates the model and returns the loss (run with gradients enabled).
        grads: MSAdapter's parameter, ignored as MSAdapter ignores it (the gradients are ``p.grad``).

    Returns:
        The closure's loss, or ``None``.

    Raises:
        UnsupportedOptimizerFeatureError: a group with ``differentiable=True`` or a complex parameter.
    """
    del grads
    return _step(self, "AdamW", closure, True)
