"""``backward()`` / ``autograd.grad`` without a gradient: the implicit 1.0 of a scalar output (written on the host for
float32 on our side), other dtypes and shapes, and PyTorch's refusal for more than one element."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("Tensor.backward", "torch.autograd.backward", "torch.autograd.grad")
def implicit_gradient_of_scalar_outputs(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=41), requires_grad=True)
    (x * 3.0).sum().backward()
    first = x.grad.clone()
    (x * x).sum().reshape(1).backward()  # one element of shape [1]: accumulated into x.grad
    double = torch.tensor(data((3,), "float64", seed=42), requires_grad=True)
    torch.autograd.backward((double * 2.0).mean())
    (grad,) = torch.autograd.grad((x * 5.0).mean(), x)
    return {"first": first, "accumulated": x.grad, "double": double.grad, "grad": grad}


@case("Tensor.backward")
def implicit_gradient_of_more_than_one_element_raises(torch: Any) -> Any:
    x = torch.tensor(data((3,), seed=43), requires_grad=True)
    (x * 2.0).backward()
    return x.grad
