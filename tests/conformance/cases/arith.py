"""Out-of-place arithmetic and type promotion."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("Tensor.__truediv__")
def zero_dim_division(torch: Any) -> Any:
    return {"tensor_tensor": torch.tensor(3.0) / torch.tensor(2.0), "tensor_float": torch.tensor(3.0) / 2.0}


@case("Tensor.__truediv__")
def int_by_int_division_is_float32(torch: Any) -> Any:
    return torch.tensor([1, 2, 3]) / torch.tensor([2, 2, 2])


@case("torch.add", "Tensor.__add__")
def add_broadcast_float32(torch: Any) -> Any:
    a = torch.tensor(data((3, 1), seed=1))
    b = torch.tensor(data((1, 4), seed=2))
    return {"fn": torch.add(a, b, alpha=2), "op": a + b}
