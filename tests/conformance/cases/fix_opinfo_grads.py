"""Gradients PyTorch's OpInfo samples found lost (scripts/opinfo_sweep.py; mindspeed_ms.compat.lost_gradients):
torch.clone's input, masked_fill's 0-d value tensor, ceil and round's zero gradients."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import tensor


@case("torch.clone")
def clone_function_passes_the_gradient(torch: Any) -> Any:
    x = tensor(torch, (3, 4), seed=11, requires_grad=True)
    y = torch.clone(x)
    (y * tensor(torch, (3, 4), seed=12)).sum().backward()
    return {"y": y, "grad": x.grad, "leaf": y.is_leaf, "has_fn": y.grad_fn is not None}


@case("torch.masked_fill", "Tensor.masked_fill")
def masked_fill_value_tensor_receives_its_gradient(torch: Any) -> Any:
    x = tensor(torch, (3, 4), seed=13, requires_grad=True)
    value = torch.tensor(1.5, requires_grad=True)
    mask = tensor(torch, (3, 4), "bool", seed=14)
    weights = tensor(torch, (3, 4), seed=15)
    out = torch.masked_fill(x, mask, value)
    (out * weights).sum().backward()
    first = {"out": out, "x_grad": x.grad, "value_grad": value.grad}
    x.grad = None
    value.grad = None
    row = mask[0]
    out = x.masked_fill(row, value)
    (out * weights).sum().backward()
    return {"function": first, "method": out, "x_grad": x.grad, "value_grad": value.grad}


@case("torch.ceil", "Tensor.ceil", "torch.round", "Tensor.round")
def step_functions_give_zero_gradients(torch: Any) -> Any:
    x = torch.tensor([1.5, -0.5, 2.0, float("inf"), -3.7], requires_grad=True)
    ceil = torch.ceil(x)
    (ceil * 2.0).sum().backward()
    first = x.grad
    x.grad = None
    rounded = x.round() + x.ceil()
    rounded.sum().backward()
    second = x.grad
    x.grad = None
    torch.round(x).sum().backward()
    return {"ceil": ceil, "ceil_grad": first, "round_and_ceil": rounded, "method_grad": second, "round_grad": x.grad}
