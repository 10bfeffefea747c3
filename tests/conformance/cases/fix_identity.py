"""Conversions without change return the tensor itself; cat promotes; bit operators in place on views."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


@case("Tensor.to", "Tensor.cpu")
def to_and_cpu_without_change_return_the_tensor(torch: Any) -> Any:
    x = torch.tensor([1.0, 2.0])
    same = x.to(torch.float32)
    same.add_(1)
    on_cpu = x.to("cpu")
    cpu = x.cpu()
    other = x.to(torch.float16)
    copied = x.to(torch.float32, copy=True)
    return {"same_is_x": same is x, "to_cpu_is_x": on_cpu is x, "cpu_is_x": cpu is x, "x": x, "half": other,
            "half_is_x": other is x, "copy_is_x": copied is x}


@case("torch.cat")
def cat_promotes_mixed_dtypes(torch: Any) -> Any:
    return {"int_float": torch.cat([torch.tensor([1, 2]), torch.tensor([1.5])]),
            "int32_int64": torch.cat([torch.tensor([1], dtype=torch.int32), torch.tensor([2])]),
            "half_float": torch.cat([torch.tensor([1.0]).half(), torch.tensor([2.5])]),
            "bool_int": torch.cat([torch.tensor([True]), torch.tensor([3])])}


@case("Tensor.__iand__", "Tensor.__ior__", "Tensor.__ixor__")
def bit_operators_in_place_on_views_and_integers(torch: Any) -> Any:
    base = torch.zeros(2, 3, dtype=torch.bool)
    view = base[1]
    view |= torch.tensor([True, False, True])
    ints = torch.tensor([[12, 10], [7, 1]])
    alias = ints
    ints &= torch.tensor([10, 3])
    col = ints[:, 1]
    col ^= 5
    return {"base": base, "ints": alias, "is_same": alias is ints}
