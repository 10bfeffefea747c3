"""``alpha=`` of add/sub/subtract (mindspeed_ms.compat.alpha_ops): every form, float/int/bool operands, a Python
number on the right, ``out=``, and PyTorch's refusals of a float alpha with integers."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


def _pair(torch: Any) -> tuple[Any, Any]:
    return torch.tensor([1.0, 2.0, -3.5]), torch.tensor([0.5, 0.25, 4.0])


@case("torch.sub", "Tensor.sub", "torch.subtract", "Tensor.subtract")
def sub_applies_alpha_in_every_form(torch: Any) -> Any:
    a, b = _pair(torch)
    out = torch.empty(3)
    torch.sub(a, b, alpha=3, out=out)
    return {"function": torch.sub(a, b, alpha=2), "method": a.sub(b, alpha=-1.5), "scalar": torch.sub(a, 3, alpha=2),
            "out": out, "subtract": torch.subtract(a, b, alpha=2), "method_subtract": a.subtract(b, alpha=2),
            "alpha_one_float": torch.sub(a, b, alpha=1.0), "alpha_zero": torch.sub(a, b, alpha=0)}


@case("torch.sub", "torch.add", "Tensor.sub_", "Tensor.add_")
def integer_alpha_with_integer_tensors(torch: Any) -> Any:
    x, y = torch.tensor([1, 2, -7]), torch.tensor([5, 7, 3])
    inplace = x.clone()
    inplace.sub_(y, alpha=2)
    return {"sub": torch.sub(x, y, alpha=3), "add": torch.add(x, y, alpha=3), "sub_": inplace,
            "scalar": torch.sub(x, 4, alpha=2), "float_other": torch.sub(x, torch.tensor([0.5]), alpha=0.5)}


@case("torch.sub")
def float_alpha_with_integer_sub_raises(torch: Any) -> Any:
    return torch.sub(torch.tensor([1, 2]), torch.tensor([1, 1]), alpha=0.5)


@case("torch.add")
def float_alpha_with_integer_add_raises(torch: Any) -> Any:
    return torch.add(torch.tensor([1, 2]), torch.tensor([1, 1]), alpha=1.0)


@case("Tensor.add")
def bool_alpha_with_float_add_raises(torch: Any) -> Any:
    return torch.tensor([1.0]).add(torch.tensor([2.0]), alpha=True)


@case("torch.add", "Tensor.add")
def bool_tensors_add_with_alpha(torch: Any) -> Any:
    a, b = torch.tensor([True, False, False]), torch.tensor([True, True, False])
    return {"two": torch.add(a, b, alpha=2), "zero": a.add(b, alpha=0), "true": torch.add(a, b, alpha=True)}


@case("torch.sub")
def bool_tensors_sub_with_alpha_raises(torch: Any) -> Any:
    return torch.sub(torch.tensor([True]), torch.tensor([False]), alpha=2)


@case("torch.sub")
def sub_alpha_gradients(torch: Any) -> Any:
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (torch.sub(a, b, alpha=2.5) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    return {"a": a.grad, "b": b.grad}
