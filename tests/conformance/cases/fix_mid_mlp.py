"""The gradient norm, gelu and Adam's host loops at megatron's mid-size shapes, where mindspeed_ms.compat computes
them over host memory (torch.norm of a DDP-bucket-sized float32 tensor; gelu of 65536+ elements in the C
extension): values and gradients."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import grad_of, tensor


# PyTorch's float32 accumulation is itself up to ~5e-4 from the exact norm (ours: the float32 nearest it;
# tests/test_compat_host_norm.py asserts ours is never further from it than PyTorch's)
@case("torch.norm", rtol=5e-4, atol=0)
def norm_of_a_gradient_bucket(torch: Any) -> Any:
    grads = tensor(torch, (1_000_003,), low=-1e-2, high=1e-2)
    return torch.stack([torch.norm(grads), torch.norm(grads, 2), torch.norm(grads, "fro")])


# PyTorch's CPU gelu approximates erf (up to 1.06e-6 from the true gelu); ours is within 3.5e-7 * max(1, |x|) of
# PyTorch's (tests/test_compat_gelu.py): 2.1e-6 at |x| = 6
@case("torch.nn.functional.gelu", rtol=0, atol=2.1e-6)
def gelu_megatron_mlp_shape(torch: Any) -> Any:
    x = tensor(torch, (128, 4, 256), low=-6, high=6)
    return grad_of(torch, torch.nn.functional.gelu, x)


@case("torch.nn.functional.gelu", rtol=2e-3, atol=2e-3)
def gelu_large_float16(torch: Any) -> Any:
    x = tensor(torch, (256, 512), dtype="float16", low=-4, high=4)
    return grad_of(torch, torch.nn.functional.gelu, x)
