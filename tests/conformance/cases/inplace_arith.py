"""In-place arithmetic: operators and methods, on owners, aliases and views."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


@case("Tensor.__iadd__")
def iadd_alias_sees_update(torch: Any) -> Any:
    b = torch.zeros(3)
    c = b
    b += 1
    return {"b": b, "c": c}


@case("Tensor.__iadd__")
def iadd_on_slice_reaches_base(torch: Any) -> Any:
    base = torch.zeros(3, 4)
    view = base[:, 1:3]
    view += 1
    return {"base": base, "view": view}


@case("Tensor.div_")
def int_div_inplace_refuses_float_result(torch: Any) -> Any:
    t = torch.tensor([1, 2, 3])
    t.div_(2)
    return t


@case("Tensor.mul_", "Tensor.add_")
def add_mul_inplace_on_owner(torch: Any) -> Any:
    t = torch.tensor([1.0, 2.0, 3.0])
    returned = t.mul_(2).add_(1)
    return {"t": t, "returned_is_self": returned is t}
