"""``mul_`` / ``div_`` / ``/=`` / ``*=`` of a float32 tensor autograd records, by a number or a tensor that does not
require a gradient (mindspeed_ms.compat.recorded_inplace: one host Function and the recorded copy, no clone):
PyTorch's values and gradients bit for bit, the tensor itself returned, and PyTorch's refusal when a saved operand
was written in place before the backward."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data

_VALUES = [3.0, -7.5, 1.0, 0.0, 1e-40, -2.5e38, 1 / 3, 65504.0]


@case("Tensor.__itruediv__", "Tensor.div_", exact=True)
def megatrons_loss_divisions(torch: Any) -> Any:
    """schedules.forward_step: ``output_tensor /= num_tokens`` (an int32 0-d tensor), ``/= num_microbatches``."""
    leaf = torch.tensor(2.75, requires_grad=True)
    loss = leaf * 3.0
    same = loss
    loss /= torch.tensor(7, dtype=torch.int32)
    loss /= 2
    loss.backward()
    return {"loss": loss.detach(), "grad": leaf.grad, "same": loss is same, "requires_grad": loss.requires_grad}


@case("Tensor.div_", "Tensor.mul_", "Tensor.__imul__", "Tensor.__itruediv__", exact=True)
def by_numbers_with_gradients(torch: Any) -> Any:
    out = {}
    for name, operand in (("float", 0.1), ("int", 3), ("negative", -2.5), ("zero", 0.0), ("huge", 1e39),
                          ("tiny", 1e-30)):
        for op in ("mul_", "div_"):
            leaf = torch.tensor(_VALUES, requires_grad=True)
            product = leaf * 1.5
            returned = getattr(product, op)(operand)
            (product * torch.arange(8.0)).sum().backward()
            out[f"{op}_{name}"] = product.detach()
            out[f"{op}_{name}_grad"] = leaf.grad
            out[f"{op}_{name}_returned"] = returned is product
    leaf = torch.tensor(_VALUES, requires_grad=True)
    product = leaf + 0.0
    product *= 4
    product /= 0.3
    product.sum().backward()
    out["operators"], out["operators_grad"] = product.detach(), leaf.grad
    return out


@case("Tensor.div_", "Tensor.mul_", exact=True)
def by_tensors_that_broadcast(torch: Any) -> Any:
    out = {}
    grid = torch.tensor(data((3, 4), seed=41))
    for name, operand in (("row", torch.tensor(data((4,), seed=42))), ("column", torch.tensor(data((3, 1), seed=43))),
                          ("same", torch.tensor(data((3, 4), seed=44))), ("scalar", torch.tensor(0.7)),
                          ("zeros", torch.tensor([0.0, -0.0, 1.0, 2.0]))):
        for op in ("mul_", "div_"):
            leaf = grid.clone().requires_grad_()
            result = leaf * 1.0
            getattr(result, op)(operand)
            (result * torch.tensor(data((3, 4), seed=45))).sum().backward()
            out[f"{op}_{name}"], out[f"{op}_{name}_grad"] = result.detach(), leaf.grad
            out[f"{op}_{name}_operand"] = operand
    return out


@case("Tensor.div_", "Tensor.mul_")
def operand_that_requires_a_gradient_gets_its_gradient(torch: Any) -> Any:
    leaf = torch.tensor(data((2, 3), seed=46)).requires_grad_()
    scale = torch.tensor([1.5, -2.0, 4.0], requires_grad=True)
    result = leaf * 2.0
    result.div_(scale)
    result.mul_(scale * 3.0)
    result.sum().backward()
    return {"result": result.detach(), "grad": leaf.grad, "scale_grad": scale.grad}


@case("Tensor.div_")
def operand_written_in_place_before_the_backward_is_refused(torch: Any) -> Any:
    """PyTorch saves the operand for ``self``'s gradient: a write into it since makes the backward raise."""
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    divisor = torch.tensor([2.0, 4.0, 8.0])
    result = leaf * 1.0
    result.div_(divisor)
    divisor.add_(1.0)
    result.sum().backward()
    return leaf.grad


@case("Tensor.div_")
def operand_written_in_place_after_the_backward_is_fine(torch: Any) -> Any:
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    divisor = torch.tensor([2.0, 4.0, 8.0])
    result = leaf * 1.0
    result.div_(divisor)
    result.sum().backward()
    divisor.add_(1.0)
    return {"grad": leaf.grad, "divisor": divisor}


@case("Tensor.div_", "Tensor.mul_")
def a_saved_self_written_in_place_is_refused(torch: Any) -> Any:
    """``exp`` saves its result; dividing that result in place makes the backward refuse it (PyTorch's check)."""
    leaf = torch.tensor([0.5, 1.0], requires_grad=True)
    result = leaf.exp()
    result.div_(2.0)
    result.sum().backward()
    return leaf.grad
