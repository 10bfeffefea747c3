"""Tensor.add_ of bool tensors with alpha=False (scripts/opinfo_sweep.py; mindspeed_ms.compat.bool_alpha)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


@case("Tensor.add_")
def inplace_add_of_bool_with_false_alpha(torch: Any) -> Any:
    x = torch.tensor([[True, False, False, True], [False, False, True, False]])
    y = torch.tensor([True, True, False, False])
    unchanged = x.clone().add_(y, alpha=False)
    added = x.clone().add_(y, alpha=True)
    return {"unchanged": unchanged, "added": added, "function": torch.add(x, y, alpha=False)}
