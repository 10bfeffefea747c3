"""bfloat16 where megatron uses it (``--bf16``: parameters and activations in bfloat16, gradients accumulated into
bfloat16 or float32 buffers, casts around the optimizer): arithmetic, in-place updates of buffer views, casts,
reductions, and gradients flowing through bfloat16."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register, tensor

B = "bfloat16"

CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "add": (("Tensor.__add__",), lambda torch: tensor(torch, (2, 3), B) + tensor(torch, (2, 3), B, seed=1)),
    "mul_scalar": (("Tensor.__mul__",), lambda torch: tensor(torch, (2, 3), B) * 0.5),
    "truediv": (("Tensor.__truediv__",), lambda torch: tensor(torch, (2, 3), B) / 4),
    "sub_float32_promotes": (("Tensor.__sub__",), lambda torch: tensor(torch, (2, 3), B) - tensor(torch, (2, 3))),
    "eq": (("Tensor.__eq__",), lambda torch: tensor(torch, (2, 3), B) == tensor(torch, (2, 3), B)),
    "comparisons": (("Tensor.__ge__", "Tensor.__gt__", "Tensor.__le__", "Tensor.__lt__", "Tensor.__ne__", "torch.gt",
                     "Tensor.le"), lambda torch: [
        tensor(torch, (2, 3), B) >= 0.25, tensor(torch, (2, 3), B) > tensor(torch, (2, 3), B, seed=1),
        tensor(torch, (2, 3), B) <= 0, 0.5 < tensor(torch, (2, 3), B),
        tensor(torch, (2, 3), B) != tensor(torch, (2, 3)),
        torch.gt(tensor(torch, (2, 3), B), -0.5), tensor(torch, (2, 3), B).le(tensor(torch, (2, 3), B, seed=2)),
        tensor(torch, (2, 3)) < tensor(torch, (2, 3), B, seed=3)]),
    "to_float32": (("Tensor.float",), lambda torch: tensor(torch, (2, 3), B).float()),
    "from_float32": (("Tensor.to",), lambda torch: tensor(torch, (2, 3)).to(torch.bfloat16)),
    "half_to_bf16": (("Tensor.to",), lambda torch: tensor(torch, (2, 3), "float16").to(torch.bfloat16)),
    "view_reshape": (("Tensor.view", "Tensor.reshape"), lambda torch: [tensor(torch, (2, 3), B).view(3, 2),
                                                                       tensor(torch, (2, 3), B).t().reshape(6)]),
    "cat_split": (("torch.cat", "torch.split"), lambda torch: torch.split(
        torch.cat([tensor(torch, (2, 3), B), tensor(torch, (1, 3), B, seed=1)]), 2)),
    "sum": (("Tensor.sum",), lambda torch: tensor(torch, (4, 8), B).sum(dim=-1)),
    "sum_float32_dtype": (("torch.sum",), lambda torch: torch.sum(tensor(torch, (4, 8), B), dtype=torch.float32)),
    "max": (("torch.max",), lambda torch: torch.max(tensor(torch, (4, 8), B))),
    "matmul": (("torch.matmul",), lambda torch: torch.matmul(tensor(torch, (2, 3), B),
                                                             tensor(torch, (3, 2), B, seed=1))),
    "zeros_like": (("torch.zeros_like",), lambda torch: torch.zeros_like(tensor(torch, (2, 3), B))),
    "empty_facts": (("torch.empty",), lambda torch: (torch.empty(3, dtype=torch.bfloat16).dtype,
                                                     tuple(torch.empty(2, 2, dtype=torch.bfloat16).shape))),
    "tensor_dtype": (("torch.tensor",), lambda torch: torch.tensor([1.5, -2.25], dtype=torch.bfloat16)),
    "softmax_via_float": (("torch.nn.functional.softmax", "Tensor.float"), lambda torch: torch.nn.functional.softmax(
        tensor(torch, (2, 5), B).float(), dim=-1).to(torch.bfloat16)),
}


def _buffer_update(op: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        buffer = torch.zeros(12).to(torch.bfloat16)  # torch.zeros(dtype=bfloat16) has its own case
        grad_view = buffer[4:10].view(2, 3)
        op(torch, grad_view)
        return {"view": grad_view, "buffer": buffer}
    return run


BUFFER: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "add_": ("Tensor.add_", lambda torch, v: v.add_(tensor(torch, (2, 3), B))),
    "copy_": ("Tensor.copy_", lambda torch, v: v.copy_(tensor(torch, (2, 3)))),
    "mul_": ("Tensor.mul_", lambda torch, v: v.add_(1.0).mul_(0.5)),
    "div_": ("Tensor.div_", lambda torch, v: v.add_(3.0).div_(2.0)),
    "zero_": ("Tensor.zero_", lambda torch, v: v.add_(1.0).zero_()),
    "iadd": ("Tensor.__iadd__", lambda torch, v: v.__iadd__(tensor(torch, (2, 3), B))),
    "fill_": ("Tensor.fill_", lambda torch, v: v.fill_(0.375)),
}


def _grad_through_bf16(torch: Any) -> Any:
    w = tensor(torch, (3, 2), requires_grad=True)
    x = tensor(torch, (4, 3), B, seed=1)
    out = torch.matmul(x.float(), w).to(torch.bfloat16)
    (out.float() * tensor(torch, (4, 2), seed=2)).sum().backward()
    return {"out": out, "grad": w.grad}


for _name, (_ops, _fn) in CASES.items():
    register(__name__, _name, _ops, _fn)
for _name, (_op, _fn) in BUFFER.items():
    register(__name__, f"buffer_view_{_name}", (_op,), _buffer_update(_fn))
register(__name__, "grad_through_bfloat16_cast", ("Tensor.to", "Tensor.float", "Tensor.backward"), _grad_through_bf16,
         rtol=1e-2, atol=1e-2)
