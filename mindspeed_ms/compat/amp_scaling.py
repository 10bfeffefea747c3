"""PyTorch's loss-scaling primitives ``torch._amp_foreach_non_finite_check_and_unscale_`` and
``torch._amp_update_scale_`` (every MindSpore device: MSAdapter's Python code).

MSAdapter 0.5.0b1's ``_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)`` unscales the
gradients but **never reports a non-finite one**: it rebinds its local ``found_inf`` (the caller's tensor is never
written) to ``logical_and(found_inf, not isfinite(grad).all())``. Megatron's mixed-precision optimizer
(``MixedPrecisionOptimizer._unscale_main_grads_and_check_for_nan``, every ``--fp16`` run and ``--bf16`` with a loss
scale) reads ``found_inf`` to skip the step and lower the loss scale: on an overflow the step was taken with
inf/nan gradients, silently, and the scale never came down. ``_amp_update_scale_`` (``torch.cuda.amp.GradScaler
.update``) is missing (AttributeError).

Both follow PyTorch's kernels: every gradient is multiplied by ``inv_scale`` in place (skipped when it is 1.0, which
changes no value) and ``found_inf`` is set to 1.0 when any element of any gradient was not finite before the
multiplication (it is only ever set, never cleared); the scale is multiplied by ``backoff_factor`` after an overflow
(the growth tracker reset), else by ``growth_factor`` every ``growth_interval`` clean steps when the result is
finite. PyTorch's argument checks come first: nothing is written when they refuse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mindspeed_ms.compat.errors import DTypeNotSupportedError, TorchRefusalError

__all__ = ["foreach_non_finite_check_and_unscale_", "update_scale_"]

_UNSCALE = "torch._amp_foreach_non_finite_check_and_unscale_"
_UPDATE = "torch._amp_update_scale_"


def _one_float(op: str, name: str, tensor: Any) -> None:
    if getattr(tensor, "shape", None) is None or math.prod(tensor.shape) != 1:
        raise TorchRefusalError(op, f"{name} must be a 1-element tensor.")
    if not tensor.is_floating_point():
        raise TorchRefusalError(op, f"{name} must be a float tensor.")


def foreach_non_finite_check_and_unscale_(main_grads: Sequence[Any], found_inf: Any, inv_scale: Any) -> None:
    """``torch._amp_foreach_non_finite_check_and_unscale_``: unscale ``main_grads`` in place; set ``found_inf``
    to 1.0 when one of them holds an inf or a nan."""
    _one_float(_UNSCALE, "found_inf", found_inf)
    _one_float(_UNSCALE, "inv_scale", inv_scale)
    for grad in main_grads:
        if not grad.is_floating_point():
            raise DTypeNotSupportedError(_UNSCALE, str(grad.dtype), f'"_amp_foreach_non_finite_check_and_unscale_cpu" '
                                                                    f"not implemented for '{grad.dtype}'")
    import msadapter

    finite = all(bool(msadapter.isfinite(grad).all()) for grad in main_grads if grad.numel())
    if float(inv_scale.reshape(-1)[0].item()) != 1.0:
        for grad in main_grads:
            grad.mul_(inv_scale.to(grad.dtype) if grad.dtype != inv_scale.dtype else inv_scale)
    if not finite:
        found_inf.fill_(1.0)


def update_scale_(current_scale: Any, growth_tracker: Any, found_inf: Any, growth_factor: float,
                  backoff_factor: float, growth_interval: int) -> Any:
    """``torch._amp_update_scale_``: the dynamic loss scale's update, in place; returns ``current_scale``."""
    _one_float(_UPDATE, "current_scale", current_scale)
    if getattr(growth_tracker, "shape", None) is None or math.prod(growth_tracker.shape) != 1:
        raise TorchRefusalError(_UPDATE, "growth_tracker must be a 1-element tensor.")
    if str(growth_tracker.dtype).lower().rpartition(".")[2] != "int32":
        raise TorchRefusalError(_UPDATE, "growth_tracker must be an int tensor.")
    _one_float(_UPDATE, "found_inf", found_inf)
    scale = float(current_scale.reshape(-1)[0].item())
    if float(found_inf.reshape(-1)[0].item()) > 0:
        current_scale.fill_(scale * backoff_factor)
        growth_tracker.fill_(0)
        return current_scale
    successful = int(growth_tracker.reshape(-1)[0].item()) + 1
    if successful == growth_interval:
        grown = float(np.float32(scale * growth_factor))  # PyTorch tests the float32 result
        if math.isfinite(grown):
            current_scale.fill_(grown)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)
    return current_scale
