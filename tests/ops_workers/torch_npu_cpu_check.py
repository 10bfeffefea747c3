"""Call MSAdapter's ``torch_npu`` fused ops after the ``msadapter_cpu`` provider's patches, on torch tensors.

Run as a subprocess (importing msadapter changes MindSpore's Tensor class for the whole process).
Each of the four patched functions (``npu_rms_norm``, ``npu_swiglu``, ``npu_rotary_position_embedding``,
``npu_fusion_attention``) is called the way MindSpeed calls it and compared with a float64 NumPy
reference. Prints one line per check and ``ALL PASSED``; exits 1 if any check failed.
"""

from __future__ import annotations

import os
import sys

import msadapter  # noqa: F401 - must precede `import torch` to get MSAdapter's torch
import numpy as np
import torch
import torch_npu

from mindspeed_ms import PatchRegistry
from mindspeed_ms.adaptation import Adaptation, Settings

# msadapter_cpu_edges wraps targets the msadapter provider creates (msadapter.linalg.vector_norm): off with it
ONLY_CPU = {"MINDSPEED_MS_DISABLE": "msadapter,msadapter_cpu_edges,megatron_core,mindspeed,third_party,pytorch_cpu"}
PATCHED = ("npu_rms_norm", "npu_swiglu", "npu_rotary_position_embedding", "npu_fusion_attention")
rng = np.random.default_rng(0)
failures: list[str] = []


def check(name: str, got: object, ref: np.ndarray, tol: float = 1e-5) -> None:
    array = got.detach().numpy() if hasattr(got, "detach") else np.asarray(got)  # type: ignore[union-attr]
    ok = array.shape == ref.shape and np.allclose(array.astype(np.float64), ref, rtol=tol, atol=tol)
    print(f"{name}: {'ok' if ok else f'MISMATCH (max diff {np.abs(array - ref).max()})'}", flush=True)
    if not ok:
        failures.append(name)


originals = {name: getattr(torch_npu, name) for name in PATCHED}
registry = PatchRegistry("torch_npu-cpu")
run = Adaptation(settings=Settings.from_environ(ONLY_CPU), argv=[], framework="mindspore").run_providers(registry)
report = registry.apply()
states = {s.target: s.state for s in report.statuses}
for name in PATCHED:
    installed = getattr(torch_npu, name)
    swapped = installed is not originals[name] and states.get(f"torch_npu.{name}") == "applied"
    print(f"{name} patched: {'ok' if swapped else 'MISMATCH'}", flush=True)
    if not swapped:
        failures.append(f"{name} patched")

# RMSNorm, as MindSpeed's fused RMSNorm calls it: torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]
x = rng.standard_normal((2, 3, 16)).astype(np.float32)
gamma = rng.standard_normal(16).astype(np.float32)
y, rstd = torch_npu.npu_rms_norm(torch.tensor(x), torch.tensor(gamma), epsilon=1e-6)
ref_rstd = 1.0 / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True) + 1e-6)
check("npu_rms_norm y", y, x * ref_rstd * gamma)
check("npu_rms_norm rstd", rstd, ref_rstd)

# SwiGLU: torch_npu.npu_swiglu(x, dim=-1) = silu(first half) * second half
x = rng.standard_normal((4, 32)).astype(np.float32)
a, b = np.split(x.astype(np.float64), 2, axis=-1)
check("npu_swiglu", torch_npu.npu_swiglu(torch.tensor(x), dim=-1), a / (1.0 + np.exp(-a)) * b)

# Rotary embedding, rotate-half mode (mode=0), BSND with cos/sin broadcast over batch and heads
x = rng.standard_normal((1, 4, 2, 8)).astype(np.float32)
angles = rng.standard_normal((1, 4, 1, 8)).astype(np.float32)
cos, sin = np.cos(angles), np.sin(angles)
half = x.shape[-1] // 2
rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1).astype(np.float64)
out = torch_npu.npu_rotary_position_embedding(torch.tensor(x), torch.tensor(cos), torch.tensor(sin), mode=0)
check("npu_rotary_position_embedding", out, x.astype(np.float64) * cos + rotated * sin)

# Flash attention, BNSD with a causal mask (True = masked out), as megatron's MindSpeed path calls it
q, k, v = (rng.standard_normal((1, 2, 4, 8)).astype(np.float32) for _ in range(3))
mask = np.triu(np.ones((4, 4), dtype=bool), 1)
outputs = torch_npu.npu_fusion_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), 2, "BNSD",
                                         atten_mask=torch.tensor(mask), scale=0.35, keep_prob=1.0)
scores = (q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2)) * 0.35
scores = np.where(mask, -1e30, scores)
weights = np.exp(scores - scores.max(-1, keepdims=True))
weights /= weights.sum(-1, keepdims=True)
check("npu_fusion_attention", outputs[0], weights @ v.astype(np.float64), tol=1e-4)

registry.revert()
restored = all(getattr(torch_npu, name) is originals[name] for name in PATCHED)
print(f"revert restores torch_npu: {'ok' if restored else 'MISMATCH'}", flush=True)
if not restored:
    failures.append("revert")
print("\n".join(failures) if failures else "ALL PASSED", flush=True)
sys.stdout.flush()
os._exit(1 if failures else 0)
