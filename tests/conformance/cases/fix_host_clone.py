"""``Tensor.clone`` / ``torch.clone`` of a contiguous float32 tensor copied on the host (mindspeed_ms.compat.
fast_contiguous.host_clone): PyTorch's values bit for bit, a copy of its own memory, the gradient through it, as
megatron's ``loss_func`` clones its loss (``loss.clone().detach()``, ``loss[1].clone().detach().to(torch.int)``,
``loss[0].clone()``)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("Tensor.clone", "torch.clone", exact=True)
def copies_of_their_own_memory(torch: Any) -> Any:
    source = torch.tensor(data((3, 5), seed=61))
    copy, function_copy = source.clone(), torch.clone(source)
    source.mul_(2.0)
    special = torch.tensor([float("nan"), -0.0, 1e-45, float("inf")])
    return {"copy": copy, "function_copy": function_copy, "source": source, "special": special.clone(),
            "zero_dim": torch.tensor(2.5).clone(), "empty": torch.zeros(0, 4).clone(),
            "requires_grad": copy.requires_grad, "strided": source.t().clone().stride()}


@case("Tensor.clone", "Tensor.detach", exact=True)
def megatrons_loss_clones(torch: Any) -> Any:
    leaf = torch.tensor([1.5, -2.25, 3.0, 0.5], requires_grad=True)  # sums exact in any order
    loss = torch.cat([(leaf * 3.0).sum().view(1), torch.tensor([64.0])])
    reporting = loss.clone().detach()
    tokens = loss[1].clone().detach().to(torch.int)
    scalar = loss[0].clone()
    kept = scalar * 1.0
    (scalar * 2.0).backward()
    return {"reporting": reporting, "tokens": tokens, "scalar": scalar.detach(), "grad": leaf.grad,
            "scalar_requires_grad": scalar.requires_grad, "reporting_requires_grad": reporting.requires_grad,
            "is_leaf": scalar.is_leaf, "kept": kept.detach()}


@case("Tensor.clone")
def a_clone_written_in_place_leaves_the_gradient_of_its_source(torch: Any) -> Any:
    leaf = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    product = leaf * 2.0
    copy = product.clone()
    copy.mul_(5.0)
    (copy * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    return {"copy": copy.detach(), "product": product.detach(), "grad": leaf.grad}
