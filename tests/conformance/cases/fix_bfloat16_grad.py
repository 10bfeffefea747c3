"""bfloat16 ops whose backward (or forward) has no MindSpore CPU kernel (mindspeed_ms.compat.bfloat16
grad_in_float32_wrapper, msadapter_cpu_ops.embedding): what a ``--bf16`` megatron / MindSpeed-LLM model does on its
activations and embedding table. megatron's query/key/value ``torch.split`` of the fused QKV output, MindSpeed-LLM's
rotary ``t[..., :rot_dim], t[..., rot_dim:]`` (an empty piece included), ``F.embedding`` of a bfloat16 table; values,
result dtypes and gradients bit for bit (selection is exact in either dtype)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import register, tensor

B = "bfloat16"


def _weighted(torch: Any, out: Any, seed: int) -> Any:
    return (out.float() * tensor(torch, tuple(out.shape), seed=seed)).sum()


@case("torch.split", "Tensor.split", "Tensor.backward", exact=True)
def split_of_bfloat16_qkv_backward(torch: Any) -> Any:
    mixed = tensor(torch, (4, 1, 2, 12), B, seed=1).requires_grad_(True)
    query, key, value = torch.split(mixed * 1, [6, 3, 3], dim=3)
    left, right = (mixed * 1).split(4, dim=-1)[:2]
    loss = sum(_weighted(torch, piece, seed) for seed, piece in enumerate((query, key, value, left, right)))
    loss.backward()
    return {"pieces": [query, key, value, left, right], "dtypes": [p.dtype for p in (query, key, value)],
            "grad": mixed.grad, "grad_dtype": mixed.grad.dtype}


@case("Tensor.__getitem__", "Tensor.backward", exact=True)
def getitem_of_bfloat16_backward(torch: Any) -> Any:
    x = tensor(torch, (4, 1, 2, 8), B, seed=2).requires_grad_(True)
    t = x * 1
    head, rest = t[..., :8], t[..., 8:]
    pair = t[1:3, :, 0]
    out = torch.cat((head * 2, rest), dim=-1)
    (_weighted(torch, out, 3) + _weighted(torch, pair, 4)).backward()
    return {"head": head, "rest_shape": list(rest.shape), "pair": pair, "dtype": pair.dtype, "grad": x.grad}


@case("torch.nn.functional.embedding", "Tensor.backward", exact=True)
def embedding_of_a_bfloat16_table(torch: Any) -> Any:
    weight = tensor(torch, (10, 4), B, seed=5).requires_grad_(True)
    tokens = torch.tensor([[1, 7, 7], [0, 9, 2]])
    out = torch.nn.functional.embedding(tokens, weight)
    padded = torch.nn.functional.embedding(tokens, weight, padding_idx=7)
    (_weighted(torch, out, 6) + _weighted(torch, padded, 7)).backward()
    return {"out": out, "dtype": out.dtype, "padded": padded, "grad": weight.grad,
            "grad_dtype": weight.grad.dtype}


@case("torch.nn.functional.linear", "Tensor.backward", rtol=2.0 ** -7, atol=1e-30)
def linear_of_bfloat16(torch: Any) -> Any:
    """MindSpeed-LLM's MoE router gating (``F.linear`` of the bfloat16 input and weight): MatMul has no bfloat16 CPU
    kernel; PyTorch's accumulates in float32 and rounds once (compared within one bfloat16 ulp)."""
    x = tensor(torch, (6, 8), B, seed=8).requires_grad_(True)
    weight = tensor(torch, (4, 8), B, seed=9).requires_grad_(True)
    bias = tensor(torch, (4,), B, seed=10)
    out = torch.nn.functional.linear(x, weight)
    biased = torch.nn.functional.linear(x, weight, bias)
    (_weighted(torch, out, 11) + _weighted(torch, biased, 12)).backward()
    return {"out": out, "dtype": out.dtype, "biased": biased, "grad_x": x.grad, "grad_weight": weight.grad}


def _routing(torch: Any) -> Any:
    """MindSpeed-LLM's MoE routing and token dispatch on a bfloat16 model: top-k of the router logits, the sort
    of the routing map, the gather/scatter of tokens, the experts' batched matmul, masks."""
    logits = tensor(torch, (6, 8), B, seed=13).requires_grad_(True)
    tokens = tensor(torch, (6, 4), B, seed=14).requires_grad_(True)
    experts = tensor(torch, (2, 4, 3), B, seed=15).requires_grad_(True)
    values, indices = torch.topk(logits, 2, dim=1)
    method_values = logits.topk(3).values
    ordered, order = torch.sort(logits, dim=1, descending=True)
    argsorted = logits.argsort(dim=0)
    rows = torch.index_select(tokens, 0, torch.tensor([0, 2, 2, 5]))
    picked = torch.gather(logits, 1, indices)
    scattered = torch.zeros(6, 8, dtype=torch.bfloat16).scatter_add(1, indices, values)
    added = torch.zeros(3, 4, dtype=torch.bfloat16).index_add(0, torch.tensor([0, 2, 0, 1]), rows)
    batched = torch.bmm(rows.reshape(2, 2, 4), experts)
    mask = torch.tensor([[True, False] * 4] * 6)
    filled = logits.masked_fill(mask, 0.0)
    chosen = torch.where(mask, logits, torch.zeros_like(logits))
    stacked = torch.stack([values, picked])
    first, second = torch.chunk(tokens, 2, dim=1)
    middle = tokens.narrow(1, 1, 2)
    widened = tokens[:, :1].expand(6, 4)
    repeated = tokens.repeat_interleave(2, dim=0)
    outputs = {"values": values, "indices": indices, "method_values": method_values, "ordered": ordered,
               "order": order, "argsorted": argsorted, "rows": rows, "picked": picked, "scattered": scattered,
               "added": added, "batched": batched, "filled": filled, "chosen": chosen, "stacked": stacked,
               "first": first, "second": second, "middle": middle, "widened": widened, "repeated": repeated}
    loss = sum(_weighted(torch, out, seed) for seed, out in enumerate(outputs.values())
               if out.dtype == torch.bfloat16 and out.requires_grad)
    loss.backward()
    return {**outputs, "dtypes": [out.dtype for out in outputs.values()], "grad_logits": logits.grad,
            "grad_tokens": tokens.grad, "grad_experts": experts.grad}


register(__name__, "moe_routing_and_dispatch_of_bfloat16",
         ("torch.topk", "Tensor.topk", "torch.sort", "Tensor.argsort", "torch.index_select", "torch.gather",
          "Tensor.scatter_add", "Tensor.index_add", "torch.bmm", "Tensor.masked_fill", "torch.where", "torch.stack",
          "torch.chunk", "Tensor.narrow", "Tensor.expand", "Tensor.repeat_interleave", "Tensor.backward"),
         _routing, rtol=2.0 ** -7, atol=1e-30)


def _more(torch: Any) -> Any:
    """megatron's MoE capacity routing (``zeros_like(logits).scatter(1, top_indices, probs)``), losses and masks of a
    bfloat16 model, and the in-place forms."""
    logits = tensor(torch, (6, 8), B, seed=16).requires_grad_(True)
    square = tensor(torch, (2, 3, 3), B, seed=17).requires_grad_(True)
    probs, indices = torch.topk(logits, 2, dim=1)
    capacity = torch.zeros_like(logits).scatter(1, indices, probs)
    functional = torch.scatter(torch.zeros_like(logits), 1, indices, probs)
    outputs = {"capacity": capacity, "functional": functional, "logsumexp": torch.logsumexp(logits, dim=-1),
               "tril": torch.tril(logits), "triu": logits.triu(1), "pad": torch.nn.functional.pad(logits, (0, 2)),
               "cross_entropy": torch.nn.functional.cross_entropy(logits, torch.tensor([1, 2, 3, 0, 7, 5])),
               "ones_like": torch.ones_like(logits) * logits, "full": torch.full((6, 8), 0.5, dtype=torch.bfloat16),
               "baddbmm": torch.baddbmm(square, square, square), "unbind": square.unbind(0)[1]}
    loss = sum(_weighted(torch, out, seed) for seed, out in enumerate(outputs.values()) if out.requires_grad)
    loss.backward()
    inplace = torch.zeros(6, 8, dtype=torch.bfloat16)
    view = inplace[1:]
    view.scatter_(1, indices[1:], probs.detach()[1:])
    view.scatter_add_(1, indices[1:], probs.detach()[1:])
    view.index_add_(0, torch.tensor([0, 2]), logits.detach()[:2])
    view.masked_fill_(view > 0.5, -1.0)
    return {**outputs, "argmax": logits.argmax(dim=1), "dtypes": [out.dtype for out in outputs.values()],
            "grad_logits": logits.grad, "grad_square": square.grad, "inplace": inplace}


register(__name__, "routing_losses_masks_and_inplace_of_bfloat16",
         ("Tensor.scatter", "torch.scatter", "torch.logsumexp", "torch.tril", "Tensor.triu", "torch.nn.functional.pad",
          "torch.nn.functional.cross_entropy", "torch.ones_like", "torch.full", "torch.baddbmm", "Tensor.unbind",
          "Tensor.argmax", "Tensor.scatter_", "Tensor.scatter_add_", "Tensor.index_add_", "Tensor.masked_fill_",
          "Tensor.backward"), _more, rtol=2.0 ** -7, atol=2.0 ** -6)
# atol: ``logits`` feeds seven consumers whose bfloat16 gradients autograd sums in bfloat16, in its own order on each
# framework; a sum that cancels to about 0.03 keeps the rounding of terms of about 3 (half a bfloat16 ulp there, 2**-7)


@case("Tensor.masked_select", "Tensor.scatter_add_", "Tensor.backward", exact=True)
def moe_permute_and_unpermute_of_bfloat16(torch: Any) -> Any:
    """megatron's MoE permute (``probs.T.contiguous().masked_select(routing_map)``) and unpermute (the expert outputs
    summed into zeros with ``scatter_add_``), gradients through both."""
    probs = tensor(torch, (3, 4), B, seed=18).requires_grad_(True)
    routing = torch.tensor([[True, False, True, True], [False, True, True, False], [True, True, False, False]])
    permuted = probs.T.contiguous().masked_select(routing.T)
    tokens = tensor(torch, (4, 3), B, seed=19).requires_grad_(True)
    out = torch.zeros(3, 3, dtype=torch.bfloat16)
    out.scatter_add_(0, torch.tensor([0, 2, 1, 1]).unsqueeze(1).expand(-1, 3), tokens * 1)
    (_weighted(torch, permuted, 20) + _weighted(torch, out, 21)).backward()
    return {"permuted": permuted, "out": out, "requires_grad": out.requires_grad, "grad_probs": probs.grad,
            "grad_tokens": tokens.grad}
