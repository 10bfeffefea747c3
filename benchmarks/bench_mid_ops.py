"""The mid-size training step's kernels alone: MindSpore (through MSAdapter) against PyTorch, same shapes.

bench_train.py's mid size (hidden 512, 8 heads, sequence 128, micro batch 4: 512 tokens) spends its
forward and backward in a few kinds of kernels. This times each of them at that size on both sides,
with nothing of mindspeed_ms in between (MSAdapter's ``torch`` on MindSpore's CPU backend with the
runtime settings the adaptor chooses, against real CPU PyTorch), so what remains of the gap per phase
can be told apart from our own code: forward only, and forward + backward where the op has weights
(``mindspore.grad`` / ``torch.autograd.grad`` of ``out.sum()``).

The two sides run in separate processes (MSAdapter cannot live beside PyTorch), alternated over
``--rounds`` rounds on this shared machine; each prints the minimum and median of ``--runs`` runs per op;
the table keeps each op's minimum over the rounds and the ratio MindSpore/PyTorch of those minima.

    python benchmarks/bench_mid_ops.py [--reference-python .venv-ref/bin/python] [--rounds 2] [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
TOKENS, HIDDEN, HEADS, SEQ, VOCAB = 512, 512, 8, 128, 128


def _cases(torch: Any, grad: Callable[..., Any]) -> dict[str, Callable[[], Any]]:
    """The step's kernels at the mid size; ``grad(fn, *tensors)`` runs a backward of ``fn(*tensors).sum()``."""
    functional = torch.nn.functional
    torch.manual_seed(0)

    def rand(*shape: int) -> Any:
        return torch.randn(*shape)

    x, x4 = rand(TOKENS, HIDDEN), rand(TOKENS, 4 * HIDDEN)
    w_qkv, w_proj, w_fc1, w_fc2, w_out = (rand(3 * HIDDEN, HIDDEN), rand(HIDDEN, HIDDEN), rand(4 * HIDDEN, HIDDEN),
                                         rand(HIDDEN, 4 * HIDDEN), rand(VOCAB, HIDDEN))
    q, k = rand(4 * HEADS, SEQ, HIDDEN // HEADS), rand(4 * HEADS, HIDDEN // HEADS, SEQ)
    scores, probs = rand(4 * HEADS, SEQ, SEQ), rand(4 * HEADS, SEQ, HIDDEN // HEADS)
    gamma, beta = torch.ones(HIDDEN), torch.zeros(HIDDEN)
    mask = torch.ones(SEQ, SEQ).triu(1) > 0
    big = rand(6_400_000)  # the mid model's parameter count: the optimizer's and the grad norm's size
    x3, bias = rand(SEQ, TOKENS // SEQ, HIDDEN), rand(4 * HIDDEN)  # megatron's [sequence, batch, hidden]
    g4 = rand(TOKENS, 4 * HIDDEN)
    # megatron's attention at [sequence, batch, heads, 3 * head_dim] (the QKV output) and its [b, np, s, s] scores
    mixed, scores4 = rand(SEQ, TOKENS // SEQ, HEADS, 3 * (HIDDEN // HEADS)), rand(TOKENS // SEQ, HEADS, SEQ, SEQ)
    causal, buffer = torch.ones(1, 1, SEQ, SEQ).triu(1) > 0, torch.empty(4 * HEADS, SEQ, SEQ)
    head = HIDDEN // HEADS

    def attention_scores(m: Any) -> Any:
        query, key, _ = torch.split(m, [head, head, head], dim=3)
        return torch.baddbmm(buffer, query.reshape(SEQ, 4 * HEADS, head).transpose(0, 1),
                             key.reshape(SEQ, 4 * HEADS, head).transpose(0, 1).transpose(1, 2), beta=0.0,
                             alpha=head ** -0.5)

    def attention_context(p: Any, m: Any) -> Any:
        _, _, value = torch.split(m, [head, head, head], dim=3)
        return torch.bmm(p, value.reshape(SEQ, 4 * HEADS, head).transpose(0, 1))

    return {
        "linear qkv 512x512 -> 1536": lambda: functional.linear(x, w_qkv),
        "linear proj 512x512 -> 512": lambda: functional.linear(x, w_proj),
        "linear fc1 512x512 -> 2048": lambda: functional.linear(x, w_fc1),
        "linear fc2 512x2048 -> 512": lambda: functional.linear(x4, w_fc2),
        "linear output 512x512 -> 128": lambda: functional.linear(x, w_out),
        "fc1 forward+backward": lambda: grad(lambda a, w: functional.linear(a, w), x, w_fc1),
        # megatron's linear layers: torch.matmul(input, weight.t()), grad_output.t().matmul(input), + bias
        "matmul x @ w_fc1.t() (megatron)": lambda: torch.matmul(x3, w_fc1.t()),
        "matmul x4 @ w_fc2.t() (megatron)": lambda: torch.matmul(x4.reshape(SEQ, -1, 4 * HIDDEN), w_fc2.t()),
        "matmul g.t() @ x (weight grad)": lambda: torch.matmul(g4.t(), x),
        "bias add 512x2048 + 2048": lambda: x4 + bias,
        "bias add forward+backward": lambda: grad(lambda a, b: a + b, x4, bias),
        "bmm scores 32x128x64 @ 64x128": lambda: torch.bmm(q, k),
        "bmm context 32x128x128 @ 128x64": lambda: torch.bmm(scores, probs),
        "masked_fill + softmax 32x128x128": lambda: torch.softmax(scores.masked_fill(mask, -10000.0), dim=-1),
        "gelu 512x2048": lambda: functional.gelu(x4),
        "gelu forward+backward": lambda: grad(functional.gelu, x4),
        "layer_norm 512x512": lambda: functional.layer_norm(x, (HIDDEN,), gamma, beta),
        "layer_norm forward+backward": lambda: grad(lambda a: functional.layer_norm(a, (HIDDEN,), gamma, beta), x),
        "layer_norm [128,4,512] fwd+bwd (x, w, b)": lambda: grad(
            lambda a, w, b: functional.layer_norm(a, (HIDDEN,), w, b), x3, gamma, beta),
        "masked_fill causal [4,8,128,128]": lambda: scores4.masked_fill(causal, -10000.0),
        "masked_fill causal fwd+bwd": lambda: grad(lambda s: s.masked_fill(causal, -10000.0), scores4),
        "softmax [4,8,128,128]": lambda: torch.nn.Softmax(dim=-1)(scores4),
        "masked_fill + softmax fwd+bwd": lambda: grad(
            lambda s: torch.nn.Softmax(dim=-1)(s.masked_fill(causal, -10000.0)), scores4),
        "attention scores baddbmm (split views)": lambda: attention_scores(mixed),
        "attention scores fwd+bwd": lambda: grad(attention_scores, mixed),
        "attention context bmm (split views)": lambda: attention_context(scores, mixed),
        "attention context fwd+bwd": lambda: grad(attention_context, scores, mixed),
        "add 512x512": lambda: x + x,
        "dropout p=0.1 512x512": lambda: functional.dropout(x, 0.1, True),
        "mul 6.4M": lambda: big * big,
        "lerp 6.4M": lambda: torch.lerp(big, big, 0.1),
        "m + w * (g - m) 6.4M (Adam's lerp)": lambda: big + 0.1 * (big - big),
        "sum of squares 6.4M": lambda: (big * big).sum(),
        # megatron's gradient norm over the DDP bucket, its linear backward (dgrad of a 3-D gradient, bias gradient)
        "torch.norm 6.4M (grad norm)": lambda: torch.norm(big),
        "g3 @ w_fc1 (fc1 dgrad, 3-D)": lambda: torch.matmul(g4.reshape(SEQ, -1, 4 * HIDDEN), w_fc1),
        "g.sum(dim=0) 512x2048 (bias grad)": lambda: g4.sum(dim=0),
        "bias add fwd+bwd, megatron 3-D": lambda: grad(lambda a, b: a + b, x4.reshape(SEQ, -1, 4 * HIDDEN), bias),
        "gelu forward+backward, megatron 3-D": lambda: grad(functional.gelu, x4.reshape(SEQ, -1, 4 * HIDDEN)),
    }


def _host_cases(torch: Any) -> dict[str, Callable[[], Any]]:
    """The same math in NumPy over the MindSpore tensors' host memory (2 OpenBLAS threads), MindSpore side only."""
    import numpy as np

    from mindspeed_ms.compat.host_memory import host_array

    torch.manual_seed(0)
    x, x4, g4 = (host_array(torch.randn(*shape)) for shape in ((TOKENS, HIDDEN), (TOKENS, 4 * HIDDEN),
                                                              (TOKENS, 4 * HIDDEN)))
    w_qkv, w_fc1, w_fc2 = (host_array(torch.randn(*shape)) for shape in ((3 * HIDDEN, HIDDEN),
                                                                        (4 * HIDDEN, HIDDEN), (HIDDEN, 4 * HIDDEN)))
    return {
        "numpy x @ w_qkv.T": lambda: np.matmul(x, w_qkv.T),
        "numpy x @ w_fc1.T (fc1 forward)": lambda: np.matmul(x, w_fc1.T),
        "numpy x4 @ w_fc2.T (fc2 forward)": lambda: np.matmul(x4, w_fc2.T),
        "numpy g @ w_fc1 (fc1 dgrad)": lambda: np.matmul(g4, w_fc1),
        "numpy g.T @ x (fc1 wgrad)": lambda: np.matmul(g4.T, x),
    }


def _side(side: str, runs: int) -> None:
    """Time every case on this interpreter; print one JSON object {case: [min ms, median ms]}."""
    if side == "mindspore":
        os.environ["MINDSPEED_AI_FRAMEWORK"] = "mindspore"
        import mindspeed_ms.adaptor  # noqa: F401  (MSAdapter's torch, the runtime settings a training run gets)

        # isort: split
        import mindspore
        from mindspore.common.api import _pynative_executor

        def grad(fn: Callable[..., Any], *tensors: Any) -> Any:
            return mindspore.grad(lambda *a: fn(*a).sum(), grad_position=tuple(range(len(tensors))))(*tensors)

        sync: Callable[[], Any] = _pynative_executor.sync
    else:
        def grad(fn: Callable[..., Any], *tensors: Any) -> Any:
            leaves = [t.detach().requires_grad_() for t in tensors]
            return torch.autograd.grad(fn(*leaves).sum(), leaves)

        def sync() -> None:
            return None

    import torch

    results = {}
    cases = _cases(torch, grad)
    if side == "mindspore":
        cases.update(_host_cases(torch))
    for name, case in cases.items():
        for _ in range(3):
            case()
        sync()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            case()
            sync()
            times.append((time.perf_counter() - start) * 1000)
        results[name] = [min(times), statistics.median(times)]
    print(json.dumps(results), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-python", default=os.environ.get("MINDSPEED_MS_REFERENCE_PYTHON")
                        or str(ROOT / ".venv-ref" / "bin" / "python"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--side", choices=("mindspore", "pytorch"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.side:
        _side(options.side, options.runs)
        return
    if not os.path.exists(options.reference_python):
        raise SystemExit(f"no reference interpreter at {options.reference_python} (pass --reference-python)")
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**{k: v for k, v in os.environ.items() if k != "MINDSPEED_AI_FRAMEWORK"}, "GLOG_v": "3", "PYTHONPATH": path}
    best: dict[str, dict[str, float]] = {"mindspore": {}, "pytorch": {}}
    for round_index in range(options.rounds):
        for side, python in (("pytorch", options.reference_python), ("mindspore", sys.executable)):
            done = subprocess.run([python, __file__, "--side", side, "--runs", str(options.runs)], env=env,
                                  capture_output=True, text=True, timeout=1800, check=False)
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode != 0 or not lines:
                raise SystemExit(f"{side}: exit {done.returncode}\n{(done.stdout + done.stderr)[-3000:]}")
            for name, (fastest, _) in json.loads(lines[-1]).items():
                best[side][name] = min(fastest, best[side].get(name, float("inf")))
            print(f"round {round_index + 1}: {side} done", file=sys.stderr, flush=True)
    print(f"mid-size kernels ({TOKENS} tokens, hidden {HIDDEN}, {HEADS} heads, seq {SEQ}), min ms over "
          f"{options.rounds} rounds x {options.runs} runs")
    print(f"  {'op':<36} {'PyTorch':>9} {'MindSpore':>10} {'ratio':>7}")
    for name, ours in best["mindspore"].items():
        theirs = best["pytorch"].get(name)
        if theirs is None:  # NumPy over MindSpore's host memory: no PyTorch counterpart of its own
            print(f"  {name:<36} {'':>9} {ours:>10.3f}")
            continue
        print(f"  {name:<36} {theirs:>9.3f} {ours:>10.3f} {ours / theirs:>6.1f}x")


if __name__ == "__main__":
    main()
