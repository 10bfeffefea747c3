"""Loss scaling: ``torch._amp_foreach_non_finite_check_and_unscale_`` (megatron's mixed-precision optimizer calls
it every --fp16 step: ``found_inf`` decides whether the step is skipped) and ``torch._amp_update_scale_``
(``GradScaler.update``): finite, inf and nan gradients, float16 ones, views of one buffer (megatron's main_grad),
the scale's growth, backoff and float32 overflow, and the refusals. Exact."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register, tensor


def _unscale(torch: Any, poison: float | None, inv_scale: float = 0.5) -> Any:
    grads = [tensor(torch, (3,), seed=70), tensor(torch, (2, 2), seed=71), torch.ones(2, dtype=torch.float16)]
    if poison is not None:
        grads[1][1, 0] = poison
    found = torch.tensor([0.0])
    returned = torch._amp_foreach_non_finite_check_and_unscale_(grads, found, torch.tensor([inv_scale]))
    return {"found": found, "grads": grads, "returns_none": returned is None}


def _views(torch: Any) -> Any:
    buffer = tensor(torch, (6,), seed=72)
    main_grads = [buffer[:2], buffer[2:].view(2, 2)]
    main_grads[1][0, 1] = float("inf")
    found = torch.tensor([0.0])
    torch._amp_foreach_non_finite_check_and_unscale_(main_grads, found, torch.tensor([0.25]))
    return {"found": found, "buffer": buffer}


def _update(torch: Any, found: float, tracker: int, interval: int, scale: float) -> Any:
    current, growth = torch.tensor([scale]), torch.tensor([tracker], dtype=torch.int32)
    returned = torch._amp_update_scale_(current, growth, torch.tensor([found]), 2.0, 0.5, interval)
    return {"scale": current, "tracker": growth, "returns_scale": returned is current}


CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "amp_unscale_found_inf": (("torch._amp_foreach_non_finite_check_and_unscale_",), lambda torch: {
        "finite": _unscale(torch, None), "inf": _unscale(torch, float("inf")), "nan": _unscale(torch, float("nan")),
        "minus_inf_scale_one": _unscale(torch, float("-inf"), 1.0), "views": _views(torch)}),
    "amp_unscale_keeps_found_set": (("torch._amp_foreach_non_finite_check_and_unscale_",), lambda torch: (
        lambda found: (torch._amp_foreach_non_finite_check_and_unscale_([torch.ones(2)], found, torch.tensor([1.0])),
                       found)[1])(torch.tensor([1.0]))),
    "amp_unscale_two_element_found_inf_raises": (("torch._amp_foreach_non_finite_check_and_unscale_",), lambda torch: (
        torch._amp_foreach_non_finite_check_and_unscale_([torch.ones(2)], torch.zeros(2), torch.tensor([1.0])))),
    "amp_unscale_integer_grads_raise": (("torch._amp_foreach_non_finite_check_and_unscale_",), lambda torch: (
        torch._amp_foreach_non_finite_check_and_unscale_([torch.ones(2, dtype=torch.int64)], torch.zeros(1),
                                                         torch.tensor([1.0])))),
    "amp_update_scale": (("torch._amp_update_scale_",), lambda torch: {
        "count": _update(torch, 0.0, 0, 3, 65536.0), "grow": _update(torch, 0.0, 2, 3, 65536.0),
        "backoff": _update(torch, 1.0, 2, 3, 65536.0), "float32_overflow": _update(torch, 0.0, 0, 1, 3.0e38)}),
    "amp_update_scale_int64_tracker_raises": (("torch._amp_update_scale_",), lambda torch: torch._amp_update_scale_(
        torch.tensor([8.0]), torch.tensor([0]), torch.tensor([0.0]), 2.0, 0.5, 3)),
}

for _name, (_ops, _run) in CASES.items():
    register(__name__, _name, _ops, _run, exact=True)
