"""Empty operands: matrix products whose inner dimension is 0 (PyTorch: zeros) or that multiply zero rows (the
weight's gradient: zeros), and splits with sections of size 0, forward and backward; megatron's SequentialMLP
(MoE without grouped GEMM) with an expert that received no token. A gradient of an *empty* leaf is compared as
"empty or absent" (PyTorch gives an empty tensor; MindSpore's autograd drops empty gradients: not a value)."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register, tensor


def _grads(torch: Any, function: Callable[..., Any], *leaves: Any) -> Any:
    """``function(*leaves)``'s output and the leaves' gradients of a weighted sum of it, with a non-empty anchor in
    the sum (the sum of an empty tensor alone records nothing in MindSpore's autograd)."""
    leaves = tuple(leaf.detach().clone().requires_grad_(True) for leaf in leaves)
    out = function(*leaves)
    anchor = tensor(torch, (3,), seed=97, requires_grad=True)
    flat = torch.cat([out.reshape(-1), anchor])
    (flat * tensor(torch, tuple(flat.shape), seed=98)).sum().backward()
    grads = [leaf.grad if leaf.numel() else (leaf.grad is None or leaf.grad.numel() == 0) for leaf in leaves]
    return {"out": out, "grads": grads, "anchor": anchor.grad}


def _sequential_mlp(torch: Any, counts: list[int], bias: bool) -> Any:
    """Megatron's SequentialMLP: the tokens split by tokens_per_expert, each expert's fc1 -> gelu -> fc2 (megatron's
    linear: input @ weight.t(), the weight gradient grad_output.t() @ input), the outputs concatenated."""
    tokens = tensor(torch, (sum(counts), 8), seed=90, requires_grad=True)
    fc1 = [tensor(torch, (16, 8), seed=91 + i, requires_grad=True) for i in range(len(counts))]
    fc2 = [tensor(torch, (8, 16), seed=95 + i, requires_grad=True) for i in range(len(counts))]
    biases = [tensor(torch, (16,), seed=99 + i, requires_grad=True) for i in range(len(counts))] if bias else []
    outputs = []
    for i, piece in enumerate(torch.split(tokens, counts)):
        hidden = torch.nn.functional.linear(piece, fc1[i], biases[i] if bias else None)
        outputs.append(torch.matmul(torch.nn.functional.gelu(hidden), fc2[i].t()))
    out = torch.cat(outputs)
    (out * tensor(torch, tuple(out.shape), seed=89)).sum().backward()
    return {"out": out, "tokens": tokens.grad, "fc1": [w.grad for w in fc1], "fc2": [w.grad for w in fc2],
            "biases": [b.grad for b in biases]}


EXACT_CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "matmul_empty_inner_dim": (("torch.matmul", "Tensor.matmul", "Tensor.__matmul__"), lambda torch: {
        "2d": torch.matmul(torch.zeros(3, 0), torch.zeros(0, 2)),
        "method": torch.ones(4, 0).matmul(torch.ones(0, 5)),
        "operator": torch.ones(2, 3, 0) @ torch.ones(0, 4),
        "batched": torch.matmul(torch.ones(2, 3, 0), torch.ones(2, 0, 4)),
        "broadcast": torch.matmul(torch.ones(2, 1, 3, 0), torch.ones(5, 0, 2)),
        "vector_matrix": torch.matmul(torch.ones(0), torch.ones(0, 3)),
        "matrix_vector": torch.matmul(torch.ones(3, 0), torch.ones(0)),
        "vectors": torch.matmul(torch.ones(0), torch.ones(0))}),
    "mm_bmm_empty_inner_dim": (("torch.mm", "Tensor.mm", "torch.bmm", "Tensor.bmm"), lambda torch: {
        "mm": torch.mm(torch.ones(3, 0), torch.ones(0, 3)), "mm_method": torch.ones(1, 0).mm(torch.ones(0, 2)),
        "bmm": torch.bmm(torch.ones(2, 2, 0), torch.ones(2, 0, 3)),
        "bmm_method": torch.ones(1, 3, 0).bmm(torch.ones(1, 0, 1))}),
    "matmul_empty_inner_dim_grad": (("torch.matmul",), lambda torch: _grads(
        torch, torch.matmul, torch.zeros(3, 0), torch.zeros(0, 2))),
    "matmul_zero_rows_grad": (("torch.matmul", "Tensor.t"), lambda torch: _grads(
        torch, lambda x, w: torch.matmul(x, w.t()), torch.zeros(0, 8), tensor(torch, (4, 8), seed=80))),
    "matmul_zero_rows_weight_gradient_form": (("Tensor.matmul", "Tensor.t"), lambda torch: {
        # megatron's linear backward: grad_output.t().matmul(input) over zero rows
        "grad_weight": torch.zeros(0, 4).t().matmul(torch.zeros(0, 8)),
        "no_grad": _no_grad(torch, lambda: torch.ones(0, 4).t().matmul(torch.ones(0, 8)))}),
    "linear_empty_operands": (("torch.nn.functional.linear",), lambda torch: {
        "zero_rows": _grads(torch, lambda x, w, b: torch.nn.functional.linear(x, w, b), torch.zeros(0, 8),
                            tensor(torch, (4, 8), seed=81), tensor(torch, (4,), seed=82)),
        "empty_inner": _grads(torch, lambda x, w, b: torch.nn.functional.linear(x, w, b), torch.zeros(3, 0),
                              torch.zeros(4, 0), tensor(torch, (4,), seed=83)),
        "no_bias_3d": _grads(torch, torch.nn.functional.linear, torch.zeros(2, 0, 8), tensor(torch, (4, 8), seed=84))}),
    "split_empty_sections_grad": (("torch.split", "Tensor.split"), lambda torch: {
        "first": _grads(torch, lambda x: torch.cat([p * (i + 1) for i, p in enumerate(torch.split(x, [0, 3, 1]))]),
                        tensor(torch, (4, 2), seed=85)),
        "middle_and_last": _grads(torch, lambda x: torch.cat([p * (i + 1)
                                                              for i, p in enumerate(x.split([2, 0, 2, 0]))]),
                                  tensor(torch, (4, 2), seed=86)),
        "dim1": _grads(torch, lambda x: torch.cat([p * (i + 1) for i, p in enumerate(x.split([0, 2], dim=1))], 1),
                       tensor(torch, (3, 2), seed=87)),
        "shapes": [tuple(p.shape) for p in torch.split(torch.ones(4, 2), [0, 4, 0])]}),
    "narrow_length_zero": (("torch.narrow", "Tensor.narrow"), lambda torch: {
        "middle": torch.arange(6.0).reshape(2, 3).narrow(1, 1, 0),
        "at_end": torch.narrow(torch.arange(6.0).reshape(2, 3), 0, 2, 0),
        "negative_start": torch.arange(6.0).reshape(2, 3).narrow(-1, -2, 0),
        "grad": _grads(torch, lambda x: torch.cat([x.narrow(0, 1, 0).reshape(-1), x.narrow(0, 0, 2).reshape(-1)]),
                       tensor(torch, (3, 2), seed=70))}),
    "topk_k_zero": (("torch.topk", "Tensor.topk"), lambda torch: {
        "last_dim": tuple(torch.topk(torch.arange(6.0).reshape(2, 3), 0)),
        "dim0": tuple(torch.arange(6.0).reshape(2, 3).topk(0, dim=0, largest=False)),
        "int": tuple(torch.topk(torch.arange(5), 0)),
        "grad": _grads(torch, lambda x: torch.cat([torch.topk(x, 0)[0].reshape(-1), torch.topk(x, 1)[0].reshape(-1)]),
                       tensor(torch, (2, 4), seed=71))}),
    "layer_norm_without_elements": (("torch.nn.functional.layer_norm",), lambda torch: {
        "zero_rows": _grads(torch, lambda x, w, b: torch.nn.functional.layer_norm(x, (4,), w, b), torch.zeros(0, 4),
                            tensor(torch, (4,), seed=72), tensor(torch, (4,), seed=73)),
        "zero_batch_3d": _grads(torch, lambda x, w: torch.nn.functional.layer_norm(x, (4,), w), torch.zeros(2, 0, 4),
                                tensor(torch, (4,), seed=74)),
        "no_affine": torch.nn.functional.layer_norm(torch.zeros(0, 3), (3,)),
        "empty_normalized": torch.nn.functional.layer_norm(torch.zeros(2, 0), (0,))}),
}


def _no_grad(torch: Any, function: Callable[[], Any]) -> Any:
    with torch.no_grad():
        return function()


CLOSE_CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "sequential_mlp_expert_without_tokens": (("torch.split", "torch.nn.functional.linear", "torch.matmul"),
                                             lambda torch: {
        "first": _sequential_mlp(torch, [0, 3, 2], bias=False), "middle": _sequential_mlp(torch, [2, 0, 3], bias=True),
        "last": _sequential_mlp(torch, [4, 1, 0], bias=True), "none_empty": _sequential_mlp(torch, [2, 2, 1], False)}),
}

for _name, (_ops, _run) in EXACT_CASES.items():
    register(__name__, _name, _ops, _run, exact=True)
for _name, (_ops, _run) in CLOSE_CASES.items():  # float32 GEMMs: MindSpore's summation order, not PyTorch's
    register(__name__, _name, _ops, _run, rtol=1e-5, atol=1e-4)
