"""bfloat16 ops without a MindSpore CPU kernel that the OpInfo sweep (scripts/opinfo_sweep.py) found raising
MindSpore's ``TypeError: Select CPU operator[...] fail! Unsupported data type!`` (or ``KernelMod Init Failed``) where
PyTorch works: all/any/count_nonzero (NotEqual), equal (Equal), flip (ReverseV2), logical_and/or/not/xor, nonzero,
amax (ReduceMax), prod (ReduceProd), eye(dtype=bfloat16) (Eye), add(alpha=) and outer (Mul). Now computed in
float32 and cast back (mindspeed_ms.patches._msadapter_cpu_edges_half; add's alpha rounded as PyTorch's kernel rounds
it, in mindspeed_ms.compat.alpha_ops)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import tensor


def _bf16(torch: Any, shape: tuple[int, ...], seed: int, **kwargs: Any) -> Any:
    return tensor(torch, shape, seed=seed, **kwargs).to(torch.bfloat16)


@case("torch.all", "torch.any", "torch.count_nonzero", "Tensor.all", "Tensor.any", "Tensor.count_nonzero")
def truth_tests_of_bfloat16(torch: Any) -> Any:
    x = (_bf16(torch, (3, 4), seed=1) > 0).to(torch.bfloat16) * _bf16(torch, (3, 4), seed=2)
    return {"all": torch.all(x), "all_dim": torch.all(x, 1), "any": torch.any(x), "any_dim": x.any(0),
            "ones": torch.ones(5, dtype=torch.bfloat16).all(), "count": torch.count_nonzero(x),
            "count_dim": x.count_nonzero(1)}


@case("torch.equal", "torch.flip", "Tensor.flip", "torch.nonzero", "Tensor.nonzero")
def comparisons_and_selections_of_bfloat16(torch: Any) -> Any:
    x = _bf16(torch, (2, 3, 4), seed=3)
    y = x.clone()
    y[1, 2, 3] = 7
    masked = (x > 0).to(torch.bfloat16) * x
    return {"same": torch.equal(x, x.clone()), "differ": torch.equal(x, y), "flip": torch.flip(x, (0, 2)),
            "flip_method": x.flip(-1), "nonzero": torch.nonzero(masked), "nonzero_method": masked.nonzero(),
            "as_tuple": torch.nonzero(masked, as_tuple=True)}


@case("torch.logical_and", "torch.logical_or", "torch.logical_not", "torch.logical_xor", "Tensor.logical_and")
def logical_ops_of_bfloat16(torch: Any) -> Any:
    x = (_bf16(torch, (4, 5), seed=4) > 0).to(torch.bfloat16) * _bf16(torch, (4, 5), seed=5)
    y = (_bf16(torch, (4, 5), seed=6) > 0).to(torch.bfloat16)
    return {"and": torch.logical_and(x, y), "or": torch.logical_or(x, y), "not": torch.logical_not(x),
            "xor": torch.logical_xor(x, y), "method": x.logical_and(y), "mixed": torch.logical_or(x, y.float())}


@case("torch.amax", "Tensor.amax", "torch.prod", "Tensor.prod", "torch.eye")
def reductions_and_eye_of_bfloat16(torch: Any) -> Any:
    x = _bf16(torch, (3, 6), seed=7, low=0.5, high=1.5)
    return {"amax": torch.amax(x, 1), "amax_all": x.amax((0, 1)), "prod": torch.prod(x), "prod_dim": x.prod(1),
            "prod_keep": torch.prod(x, 0, keepdim=True), "eye": torch.eye(3, dtype=torch.bfloat16),
            "eye_rect": torch.eye(2, 4, dtype=torch.bfloat16)}


@case("torch.add", "Tensor.add", "torch.outer", "Tensor.outer")
def alpha_and_outer_of_bfloat16(torch: Any) -> Any:
    a = torch.tensor([[0.3, -1.7, 2.9], [-0.61, 1.13, 0.27]]).to(torch.bfloat16)
    b = torch.tensor([[1.1, 0.37, -2.2], [0.19, -0.5, 3.3]]).to(torch.bfloat16)
    return {"alpha2": torch.add(a, b, alpha=2), "alpha3": a.add(b, alpha=3), "alpha_float": torch.add(a, b, alpha=0.3),
            "wider": torch.add(a, b.float(), alpha=2), "plain": torch.add(a, b), "outer": torch.outer(a[0], b[1]),
            "outer_wider": a[0].outer(b[0].float())}
