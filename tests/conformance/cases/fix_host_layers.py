"""Layer norm, the attention softmax and the cross entropy at megatron's mid-size shapes, where
mindspeed_ms.compat computes them in NumPy on the host (tensors of at least 65536 elements): values and
gradients of every input."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import grad_of, tensor


@case("torch.nn.functional.layer_norm", rtol=1e-4, atol=1e-4)
def layer_norm_megatron_shape(torch: Any) -> Any:
    x = tensor(torch, (128, 4, 512), low=-3, high=5)
    w, b = tensor(torch, (512,), seed=1), tensor(torch, (512,), seed=2)
    return grad_of(torch, lambda x, w, b: torch.nn.functional.layer_norm(x, (512,), w, b, 1e-5), x, w, b)


@case("torch.nn.functional.layer_norm", rtol=1e-4, atol=1e-4)
def layer_norm_large_no_affine_two_dims(torch: Any) -> Any:
    x = tensor(torch, (64, 4, 8, 64), low=-1e3, high=1e3)
    return grad_of(torch, lambda x: torch.nn.functional.layer_norm(x, (8, 64)), x)


@case("torch.nn.functional.softmax", "Tensor.masked_fill")
def softmax_megatron_attention(torch: Any) -> Any:
    scores = tensor(torch, (4, 8, 128, 128), low=-8, high=8)
    causal = torch.ones(1, 1, 128, 128).triu(1) > 0
    return grad_of(torch, lambda s: torch.nn.Softmax(dim=-1)(s.masked_fill(causal, -10000.0)), scores)


@case("torch.softmax", "Tensor.softmax")
def softmax_large_last_dim(torch: Any) -> Any:
    x = tensor(torch, (64, 4, 256), low=-30, high=30)
    return {"function": grad_of(torch, lambda x: torch.softmax(x, -1), x),
            "method": grad_of(torch, lambda x: x.softmax(dim=2), x)}


@case("torch.baddbmm", "torch.bmm", "torch.split", rtol=1e-4, atol=1e-5)
def attention_products_of_strided_views(torch: Any) -> Any:
    mixed = tensor(torch, (128, 4, 8, 192))
    probs = tensor(torch, (32, 128, 128), low=0, high=1)
    buffer = torch.full((32, 128, 128), float("nan"))

    def attention(mixed: Any, probs: Any) -> Any:
        query, key, value = torch.split(mixed, [64, 64, 64], dim=3)
        scores = torch.baddbmm(buffer, query.reshape(128, 32, 64).transpose(0, 1),
                               key.reshape(128, 32, 64).transpose(0, 1).transpose(1, 2), beta=0.0, alpha=0.125)
        return torch.cat([scores, torch.bmm(probs, value.reshape(128, 32, 64).transpose(0, 1))], dim=2)

    return grad_of(torch, attention, mixed, probs)
