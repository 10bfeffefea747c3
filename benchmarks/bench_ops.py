"""Time each composite op of mindspeed_ms.ops against the MindSpore code a user would write by hand.

Forward + backward (``mindspore.grad`` of ``out.sum()``) at a small LLM-like shape (batch 2,
sequence 512, hidden 1024, 16 heads); in-place / forward-only ops time the forward. Warm-up
first, then the two variants interleaved, the minimum of ``--runs`` runs each (these machines are
noisy), and the ratio ours / hand-written of the minima. Target: no ratio above 1.2. The
``paired`` column, the median of the ratios of adjacent runs, is steadier when the machine is shared.

    python benchmarks/bench_ops.py [--runs 30] [--quick]
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import mindspore
import numpy as np
from mindspore import Tensor, mint, ops

from mindspeed_ms import ops as ms_ops

Fn = Callable[[], Any]


def _sync() -> None:
    try:
        from mindspore.common.api import _pynative_executor

        _pynative_executor.sync()
    except (ImportError, AttributeError):  # older/newer MindSpore: fall back to a host read
        Tensor(np.zeros(1, np.float32)).asnumpy()


def fwd_bwd(fn: Callable[..., Tensor], *args: Tensor, positions: tuple[int, ...] = (0,)) -> Fn:
    grad = mindspore.grad(lambda *a: fn(*a).sum(), grad_position=positions)
    return lambda: grad(*args)


def measure(ours: Fn, baseline: Fn, runs: int, warmup: int = 3) -> tuple[float, float, float]:
    """Return (min ours, min hand-written, median of the paired per-run ratios), in seconds."""
    for _ in range(warmup):
        ours(), baseline()
    _sync()
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(runs):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for which in order:
            fn = ours if which == 0 else baseline
            start = time.perf_counter()
            fn()
            _sync()
            times[which].append(time.perf_counter() - start)
    paired = float(np.median(np.asarray(times[0]) / np.asarray(times[1])))
    return min(times[0]), min(times[1]), paired


def cases(b: int, s: int, h: int, heads: int) -> dict[str, tuple[Fn, Fn, str]]:
    rng = np.random.default_rng(0)

    def rand(*shape: int) -> Tensor:
        return Tensor(rng.standard_normal(shape).astype(np.float32))

    out: dict[str, tuple[Fn, Fn, str]] = {}
    x, gamma = rand(b, s, h), rand(h)

    def rms_hand(a: Tensor, g: Tensor) -> Tensor:
        return a * mint.rsqrt(mint.mean(a * a, dim=-1, keepdim=True) + 1e-6) * g

    out["npu_rms_norm"] = (
        fwd_bwd(lambda a, g: ms_ops.npu_rms_norm(a, g)[0], x, gamma, positions=(0, 1)),
        fwd_bwd(rms_hand, x, gamma, positions=(0, 1)),
        "fwd+bwd",
    )
    xs = rand(b, s, 4 * h)

    def swiglu_hand(a: Tensor) -> Tensor:
        left, right = mint.chunk(a, 2, -1)
        return mint.nn.functional.silu(left) * right

    out["npu_swiglu"] = (fwd_bwd(ms_ops.npu_swiglu, xs), fwd_bwd(swiglu_hand, xs), "fwd+bwd")
    d = h // heads
    xr, cos, sin = rand(b, s, heads, d), rand(1, s, 1, d), rand(1, s, 1, d)

    def rope_hand(a: Tensor) -> Tensor:
        rotated = mint.cat((-a[..., d // 2 :], a[..., : d // 2]), -1)
        return a * cos + rotated * sin

    out["npu_rotary_position_embedding"] = (
        fwd_bwd(lambda a: ms_ops.npu_rotary_position_embedding(a, cos, sin), xr),
        fwd_bwd(rope_hand, xr),
        "fwd+bwd",
    )
    tokens = b * s
    total, dy, acc = rand(tokens, h), rand(tokens, h), rand(h, h)

    def matmul_add_hand() -> None:
        acc.copy_(acc + mint.matmul(dy.T, total))

    out["npu_matmul_add_fp32"] = (lambda: ms_ops.npu_matmul_add_fp32(total, dy, acc), matmul_add_hand, "fwd")
    experts, ffn = 8, h // 2
    sizes = rng.multinomial(tokens, np.ones(experts) / experts)
    ends = [int(v) for v in np.cumsum(sizes)]
    xg, wg = rand(tokens, h), rand(experts, h, ffn)

    def gmm_hand(a: Tensor, w: Tensor) -> Tensor:
        starts = [0, *ends[:-1]]
        return mint.cat([mint.matmul(a[st:en], w[e]) for e, (st, en) in enumerate(zip(starts, ends))], 0)

    out["npu_gmm"] = (
        fwd_bwd(lambda a, w: ms_ops.npu_gmm(a, w, group_list=ends), xg, wg, positions=(0, 1)),
        fwd_bwd(gmm_hand, xg, wg, positions=(0, 1)),
        "fwd+bwd",
    )
    topk = 2
    idx = Tensor(np.stack([rng.choice(experts, topk, replace=False) for _ in range(tokens)]).astype(np.int32))
    tok, probs = rand(tokens, h), Tensor(rng.random((tokens, topk)).astype(np.float32))

    def moe_ours(t: Tensor, p: Tensor) -> Tensor:
        permuted, sorted_indices = ms_ops.npu_moe_token_permute(t, idx)
        return ms_ops.npu_moe_token_unpermute(permuted, sorted_indices, p)

    def moe_hand(t: Tensor, p: Tensor) -> Tensor:
        _, order = ops.sort(idx.reshape(-1).astype(mindspore.float32))
        permuted = ops.gather(t, order // topk, 0)
        _, inverse = ops.sort(order)
        rows = ops.gather(permuted, inverse, 0).reshape(tokens, topk, h)
        return (rows * p.reshape(tokens, topk, 1)).sum(1)

    out["npu_moe_token_permute+unpermute"] = (
        fwd_bwd(moe_ours, tok, probs, positions=(0, 1)),
        fwd_bwd(moe_hand, tok, probs, positions=(0, 1)),
        "fwd+bwd",
    )
    q, k, v = rand(b, s, h), rand(b, s, h), rand(b, s, h)
    causal = Tensor(np.triu(np.ones((s, s), bool), 1))
    scale = 1.0 / float(np.sqrt(d))

    def attn_ours(a: Tensor, bb: Tensor, c: Tensor) -> Tensor:
        return ms_ops.npu_fusion_attention(a, bb, c, heads, "BSH", atten_mask=causal, scale=scale)[0]

    def attn_hand(a: Tensor, bb: Tensor, c: Tensor) -> Tensor:
        split = [ops.transpose(t.reshape(b, s, heads, d), (0, 2, 1, 3)) for t in (a, bb, c)]
        scores = mint.matmul(split[0], ops.transpose(split[1], (0, 1, 3, 2))) * scale
        probs_ = mint.softmax(ops.masked_fill(scores, causal, -1e30), dim=-1)
        return ops.transpose(mint.matmul(probs_, split[2]), (0, 2, 1, 3)).reshape(b, s, h)

    out["npu_fusion_attention"] = (
        fwd_bwd(attn_ours, q, k, v, positions=(0, 1, 2)),
        fwd_bwd(attn_hand, q, k, v, positions=(0, 1, 2)),
        "fwd+bwd",
    )
    w, res = rand(h, h), Tensor(np.zeros((tokens, h), np.float32))

    def matmul_hand() -> None:
        res.copy_(mint.matmul(total, w))

    out["pure_matmul (CoC, 1 rank)"] = (lambda: ms_ops.pure_matmul(None, total, w, res), matmul_hand, "fwd")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs per variant (minimum is kept)")
    parser.add_argument("--quick", action="store_true", help="a 4x smaller shape, for a smoke test")
    args = parser.parse_args()
    b, s, h, heads = (2, 128, 512, 8) if args.quick else (2, 512, 1024, 16)
    print(f"shape: batch {b}, seq {s}, hidden {h}, heads {heads}; min of {args.runs} interleaved runs")
    print(f"{'op':34} {'pass':8} {'ours ms':>9} {'hand ms':>9} {'ratio':>6} {'paired':>7}")
    worst = worst_paired = 0.0
    for name, (ours, baseline, kind) in cases(b, s, h, heads).items():
        t_ours, t_hand, paired = measure(ours, baseline, args.runs)
        ratio = t_ours / t_hand
        worst, worst_paired = max(worst, ratio), max(worst_paired, paired)
        print(f"{name:34} {kind:8} {t_ours * 1e3:9.2f} {t_hand * 1e3:9.2f} {ratio:6.2f} {paired:7.2f}", flush=True)
    print(f"worst ratio of minima: {worst:.2f}, worst paired median: {worst_paired:.2f} (target <= 1.20)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
