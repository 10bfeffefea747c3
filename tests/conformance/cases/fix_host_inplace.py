"""``mul_`` and true ``div_`` of a float32 tensor that owns its memory, outside autograd's record, run in host memory
on MindSpore's CPU backend (mindspeed_ms.compat.inplace.binary_on_host): the values, the write's count, a view of the
tensor seeing it, and the refusals, against PyTorch."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


def _owned(torch: Any, shape: tuple[int, ...], seed: int) -> Any:
    return torch.tensor(data(shape, seed=seed)) * 1.0


@case("Tensor.div_", "Tensor.mul_", exact=True)
def scalar_operands_cast_to_float32(torch: Any) -> Any:
    """Python floats that float32 does not hold exactly, ints, one beyond float32's range, zero and negative zero."""
    results = {}
    for name, value in (("tenth", 0.1), ("third", 1 / 3), ("int", 3), ("big_int", 2 ** 25 + 1), ("huge", 1e40),
                        ("tiny", 1e-30), ("zero", 0.0), ("negative_zero", -0.0), ("negative", -7.25)):
        for op in ("div_", "mul_"):
            tensor = _owned(torch, (3, 5), seed=221)
            tensor[0, 0] = 0.0
            returned = getattr(tensor, op)(value)
            results[f"{op}{name}"] = tensor
            results[f"{op}{name}_returns_self"] = returned is tensor
    return results


@case("Tensor.div_", "Tensor.mul_", "Tensor.unsqueeze", "Tensor.sum", exact=True)
def tensor_operands_broadcast_along_leading_and_last_dimensions(torch: Any) -> Any:
    """megatron's cross entropy: ``exp_logits.div_(sum_exp_logits.unsqueeze(dim=-1))`` over ``[s, b, vocab]``; and
    operands of the full shape, of the last dimension, 0-d, containing zeros."""
    logits = _owned(torch, (4, 2, 6), seed=222)
    sums = _owned(torch, (4, 2), seed=234)
    logits.div_(sums.unsqueeze(dim=-1))
    results = {"divided_by_the_sums": logits}
    for name, operand in (("full", _owned(torch, (4, 2, 6), seed=223)), ("last", _owned(torch, (6,), seed=224)),
                          ("scalar_tensor", torch.tensor(0.3)), ("zeros", torch.zeros(2, 1))):
        for op in ("div_", "mul_"):
            tensor = _owned(torch, (4, 2, 6), seed=225)
            getattr(tensor, op)(operand)
            results[f"{op}{name}"] = tensor
    return results


@case("Tensor.div_", "Tensor.mul_", "Tensor._version", "Tensor.view", exact=True)
def host_writes_are_seen_by_views_and_counted(torch: Any) -> Any:
    tensor = _owned(torch, (12,), seed=226)
    view = tensor[4:8].view(2, 2)
    before = (tensor._version, view._version)
    tensor.div_(3.0)
    tensor.mul_(_owned(torch, (12,), seed=227))
    return {"view": view, "moved": [tensor._version - before[0], view._version - before[1]]}


@case("Tensor.div_", "Tensor.backward")
def dividing_a_saved_tensor_then_the_backward_refuses(torch: Any) -> Any:
    x = _owned(torch, (3, 4), seed=228)
    w = torch.tensor(data((3, 4), seed=229), requires_grad=True)
    z = x * w
    x.div_(2.0)
    z.sum().backward()
    return {"w_grad": w.grad}


@case("Tensor.mul_", "Tensor.div_")
def operands_that_do_not_broadcast_to_self_or_overlap_it_partly_raise(torch: Any) -> Any:
    outcomes = {}
    for name, make in (("wider", lambda t: t.mul_(_owned(torch, (3, 5), seed=230))),
                       ("partial_overlap", lambda t: t.view(-1)[1:].div_(t.view(-1)[:-1]))):
        tensor = _owned(torch, (1, 5), seed=231)
        try:
            make(tensor)
            outcomes[name] = "returned"
        except RuntimeError:  # PyTorch's RuntimeError; ours a subclass of it naming the op
            outcomes[name] = "raised"
        outcomes[f"{name}_unchanged"] = tensor
    return outcomes


@case("Tensor.mul_", "Tensor.div_", "Tensor.backward")
def operands_that_require_grad_keep_autograd(torch: Any) -> Any:
    """An operand autograd records: the kernels' path, gradients as PyTorch's."""
    w = torch.tensor(data((4,), seed=232), requires_grad=True)
    tensor = _owned(torch, (3, 4), seed=233)
    tensor.mul_(w)
    tensor.div_(w * 2.0)
    tensor.sum().backward()
    return {"tensor": tensor.detach(), "w_grad": w.grad}


@case("Tensor.div_", "Tensor.exp", "Tensor.sum", "Tensor.unsqueeze")
def cross_entropy_probabilities_in_place(torch: Any) -> Any:
    """megatron's ``exp_logits.div_(sum_exp_logits.unsqueeze(dim=-1))`` after its exp and sum (those kernels are not
    bit-identical to PyTorch's: within the float32 tolerances)."""
    logits = _owned(torch, (4, 2, 6), seed=222).exp()
    logits.div_(logits.sum(dim=-1).unsqueeze(dim=-1))
    return {"probs": logits}
