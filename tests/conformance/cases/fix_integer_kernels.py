"""bool and narrow integer inputs without a MindSpore CPU kernel, found by the OpInfo sweep (scripts/opinfo_sweep.py)
raising where PyTorch works (mindspeed_ms.compat.integer_kernels): max/min/amax/amin of bool (Reduce), sign of
uint8/int8/int16 (Sign), logsumexp of bool/integer tensors (Exp, ReduceMax; PyTorch promotes to float32),
div(rounding_mode='trunc') of int64/int16/bool (Trunc)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import tensor


@case("torch.max", "torch.min", "torch.amax", "torch.amin", "Tensor.max", "Tensor.min")
def reductions_of_bool(torch: Any) -> Any:
    x = tensor(torch, (3, 4), seed=1) > 0.5
    return {"max": torch.max(x), "min": x.min(), "max_dim": torch.max(x, 1), "min_dim": x.min(dim=0, keepdim=True),
            "amax": torch.amax(x, 1), "amin": x.amin((0, 1)), "pair": torch.max(x, ~x),
            "falses": torch.zeros(3, dtype=torch.bool).max()}


@case("torch.sign", "Tensor.sign")
def sign_of_narrow_integers(torch: Any) -> Any:
    values = torch.tensor([[-3, 0, 5], [7, -1, 0]])
    return {"int8": torch.sign(values.to(torch.int8)), "int16": values.to(torch.int16).sign(),
            "uint8": torch.sign(values.abs().to(torch.uint8)), "int32": torch.sign(values.int())}


@case("torch.logsumexp", "Tensor.logsumexp")
def logsumexp_of_integers(torch: Any) -> Any:
    values = torch.tensor([[-3, 0, 5], [7, -1, 0]])
    return {"int64": torch.logsumexp(values, 1), "int32": values.int().logsumexp(0, keepdim=True),
            "uint8": torch.logsumexp(values.abs().to(torch.uint8), (0, 1)), "bool": torch.logsumexp(values > 0, 1)}


@case("torch.div", "Tensor.div")
def truncating_division_of_integers(torch: Any) -> Any:
    a = torch.tensor([-7, -6, 5, 7, 0, 9])
    b = torch.tensor([2, -4, -3, 3, 5, -2])
    trunc = {"rounding_mode": "trunc"}
    return {"scalar": torch.div(a, 2, **trunc), "tensor": torch.div(a, b, **trunc), "method": a.div(-4, **trunc),
            "int16": torch.div(a.to(torch.int16), -3, **trunc), "bool": torch.div(a > 0, 2, **trunc),
            "mixed": torch.div(a, b.to(torch.int16), **trunc), "float": a.div(2.5, **trunc),
            "floor": torch.div(a, b, rounding_mode="floor")}



@case("torch.argmax", "Tensor.argmax")
def argmax_of_bool_is_refused(torch: Any) -> Any:
    return torch.argmax(torch.tensor([False, True, False]))


@case("torch.argmin", "Tensor.argmin")
def argmin_of_bool_is_refused(torch: Any) -> Any:
    return torch.tensor([[False, True], [True, True]]).argmin(1)


@case("Tensor.max", "Tensor.min", "torch.max")
def max_and_min_over_a_dim_of_bool_keep_bool_values(torch: Any) -> Any:
    x = torch.tensor([[True, False], [False, False]])
    by_method, by_function, smallest = x.max(0), torch.max(x, 1, keepdim=True), x.min(dim=0)
    return {"method": [by_method.values, by_method.indices], "function": [by_function.values, by_function.indices],
            "min": [smallest.values, smallest[1]]}
