"""Sorts of bool tensors (scripts/opinfo_sweep.py; mindspeed_ms.compat.bool_sorts): no bool Sort kernel; PyTorch
sorts False before True (stable, so the indices of ties are in order)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


@case("torch.sort", "Tensor.sort", "torch.argsort", "Tensor.argsort")
def sort_of_bool(torch: Any) -> Any:
    b = torch.tensor([[True, False, True, False, False], [False, False, True, True, True]])
    values, indices = torch.sort(b, stable=True)
    desc_values, desc_indices = b.sort(dim=0, descending=True, stable=True)
    return {"sort": [values, indices], "sort_desc": [desc_values, desc_indices],
            "argsort": torch.argsort(b, dim=1, stable=True), "argsort_method": b.argsort(dim=1, descending=True,
                                                                                      stable=True)}
