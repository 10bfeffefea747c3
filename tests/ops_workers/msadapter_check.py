"""Run every differentiable op on MSAdapter tensors and check forward and ``.backward()``.

Run as a subprocess (importing msadapter changes MindSpore's Tensor class for the whole process).
Forward results are compared with the same op on plain MindSpore tensors; gradients from
``loss.backward()`` with the gradients from ``mindspore.grad`` (which the in-process tests check
against NumPy). Prints one line per check and exits 1 if any failed.
"""

from __future__ import annotations

import os
from typing import Callable

import mindspore
import msadapter  # noqa: F401 - must precede `import torch` to get MSAdapter's torch
import numpy as np
import torch
from mindspore import Tensor

from mindspeed_ms import ops

rng = np.random.default_rng(0)
failures: list[str] = []


def close(name: str, got: object, ref: object, tol: float = 1e-5) -> None:
    a = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)  # type: ignore[union-attr]
    b = ref.asnumpy() if hasattr(ref, "asnumpy") else np.asarray(ref)  # type: ignore[union-attr]
    ok = a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)
    print(f"{name}: {'ok' if ok else 'MISMATCH'}", flush=True)
    if not ok:
        failures.append(name)


pending: list[tuple[str, Callable[..., object], tuple[np.ndarray, ...], np.ndarray, list[np.ndarray]]] = []


def check(name: str, fn: Callable[..., object], *arrays: np.ndarray) -> None:
    """Compare fn on MSAdapter tensors (forward + .backward()) with fn on MindSpore tensors."""
    out_np = fn(*(Tensor(a) for a in arrays))
    weight = rng.standard_normal(tuple(out_np.shape)).astype(np.float32)  # type: ignore[attr-defined]
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    close(f"{name} forward", out, out_np)
    (out * torch.tensor(weight)).sum().backward()
    pending.append((name, fn, arrays, weight, [leaf.grad.asnumpy() for leaf in leaves]))


def compare_with_mindspore_grad() -> None:
    # Runs last: after a mindspore.grad call, MSAdapter's autograd records no more graphs in this
    # process (seen with msadapter 0.5.0b1 on MindSpore 2.7.1).
    for name, fn, arrays, weight, got in pending:
        positions = tuple(range(len(arrays)))
        grads = mindspore.grad(lambda *t: (fn(*t) * Tensor(weight)).sum(), grad_position=positions)(  # noqa: B023
            *(Tensor(a) for a in arrays)
        )
        grads = grads if isinstance(grads, tuple) else (grads,)
        for i, (g, ref) in enumerate(zip(got, grads)):
            close(f"{name} grad {i}", g, ref, tol=1e-4)


# A rejected call raises before any kernel runs, so MSAdapter's autograd keeps working afterwards.
try:
    ops.npu_rms_norm(torch.randn(3, 8, requires_grad=True), torch.ones(7))
    failures.append("bad gamma accepted")
except ValueError as exc:
    print(f"bad gamma rejected: {'ok' if 'gamma' in str(exc) else 'MISMATCH'}", flush=True)

x = rng.standard_normal((3, 8)).astype(np.float32)
check("npu_rms_norm", lambda a, g: ops.npu_rms_norm(a, g)[0], x, rng.standard_normal(8).astype(np.float32))
check("npu_swiglu", ops.npu_swiglu, x)
cos, sin = rng.standard_normal((2, 1, 5, 8)).astype(np.float32)
check(
    "npu_rotary_position_embedding mode 1",
    lambda a: ops.npu_rotary_position_embedding(a, Tensor(cos[None]), Tensor(sin[None]), 1),
    rng.standard_normal((1, 2, 5, 8)).astype(np.float32),
)
check(
    "npu_gmm",
    lambda a, w, b: ops.npu_gmm(a, w, bias=b, group_list=[2, 2, 6]),
    rng.standard_normal((6, 4)).astype(np.float32),
    rng.standard_normal((3, 4, 5)).astype(np.float32),
    rng.standard_normal((3, 5)).astype(np.float32),
)
idx = Tensor(np.array([[0, 2], [1, 0], [2, 1], [0, 1]], np.int32))


def moe_round_trip(tok: Tensor, probs: Tensor) -> Tensor:
    permuted, sorted_indices = ops.npu_moe_token_permute(tok, idx, 6)
    return ops.npu_moe_token_unpermute(permuted, sorted_indices, probs)


check(
    "npu_moe_token_permute+unpermute",
    moe_round_trip,
    rng.standard_normal((4, 3)).astype(np.float32),
    rng.random((4, 2)).astype(np.float32),
)
mask = Tensor(np.triu(np.ones((4, 4), bool), 1))
check(
    "npu_fusion_attention BSH gqa",
    lambda q, k, v: ops.npu_fusion_attention(q, k, v, 4, "BSH", atten_mask=mask, scale=0.5)[0],
    rng.standard_normal((2, 4, 32)).astype(np.float32),
    rng.standard_normal((2, 4, 16)).astype(np.float32),
    rng.standard_normal((2, 4, 16)).astype(np.float32),
)

# In-place ops on MSAdapter tensors.
grad = torch.zeros(5, 4)
total, dy = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 3, 5)).astype(np.float32)
ops.npu_matmul_add_fp32(torch.tensor(total), torch.tensor(dy), grad)
close("npu_matmul_add_fp32 in place", grad, dy.reshape(-1, 5).T @ total.reshape(-1, 4))
out, w2 = torch.zeros(6, 5), rng.standard_normal((5, 4)).astype(np.float32)
ops.pure_matmul(None, torch.tensor(total.reshape(6, 4)), torch.tensor(w2), out)
close("pure_matmul writes into an MSAdapter tensor", out, total.reshape(6, 4) @ w2.T)

compare_with_mindspore_grad()
if failures:
    print(f"{len(failures)} FAILED: {failures}", flush=True)
else:
    print("ALL PASSED", flush=True)
# Skip interpreter teardown: with msadapter loaded it sometimes aborts in the allocator at exit
# ("corrupted size vs. prev_size in fastbins"), after every check has run.
os._exit(1 if failures else 0)
