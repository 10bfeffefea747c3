"""bfloat16 tests, selections and moves PyTorch's OpInfo samples found without a CPU kernel (scripts/opinfo_sweep.py;
the msadapter_cpu_edges provider's via_float32_wrapper): all, any, count_nonzero, nonzero, argmin, logical_and/or/not,
flip, tile, repeat of bfloat16."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import tensor


def _bf16(torch: Any) -> Any:
    x = tensor(torch, (3, 4), "bfloat16", seed=31)
    return x.masked_fill(tensor(torch, (3, 4), seed=32) > 0.5, 0.0)


@case("torch.all", "Tensor.all", "torch.any", "Tensor.any", "torch.count_nonzero", "torch.nonzero",
      "Tensor.nonzero")
def bfloat16_truth_tests(torch: Any) -> Any:
    x = _bf16(torch)
    return {"all": torch.all(x), "all_dim": x.all(1), "any": torch.any(x, 0), "any_method": x.any(),
            "count": torch.count_nonzero(x, 1), "nonzero": torch.nonzero(x), "nonzero_method": x.nonzero()}


@case("torch.argmin", "Tensor.argmin", "torch.logical_and", "torch.logical_or", "torch.logical_not",
      "Tensor.logical_and")
def bfloat16_selection_and_logic(torch: Any) -> Any:
    x, y = _bf16(torch), tensor(torch, (3, 4), "bfloat16", seed=33)
    return {"argmin": torch.argmin(x), "argmin_dim": x.argmin(1, keepdim=True), "and": torch.logical_and(x, y),
            "or": torch.logical_or(x, y), "not": torch.logical_not(x), "and_method": x.logical_and(y)}


@case("torch.flip", "Tensor.flip", "torch.tile", "Tensor.tile", "Tensor.repeat")
def bfloat16_moves(torch: Any) -> Any:
    x = tensor(torch, (2, 3), "bfloat16", seed=34, requires_grad=True)
    flipped = torch.flip(x, (0, 1))
    repeated = x.repeat(2, 1, 2)
    (flipped.float().sum() + (repeated.float() * 2.0).sum()).backward()
    return {"flip": flipped, "flip_method": x.detach().flip(1), "tile": torch.tile(x.detach(), (2,)),
            "tile_method": x.detach().tile((3, 1)), "repeat": repeated, "grad": x.grad}
