"""The example examples/pretrain_gpt.py trains megatron-core's GPTModel on MindSpore under msrun (CPU).

One tensor-parallel-size-1 run of 20 iterations on one worker, with the call trace on (shared by three tests
through a module fixture), and one tensor-parallel-size-2 run on two workers (its first iterations, to keep
the suite short), which must give the same loss at every step.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import pytest
from _helpers import EXAMPLE, msrun_command, subprocess_env, worker_logs

ITERATIONS = 20
TP2_ITERATIONS = 8
LOSS_LINE = re.compile(r"^iteration\s+(\d+)/\s*\d+ \| lm loss (\S+) \|", re.MULTILINE)
SPEED_LINE = re.compile(r"training done: \d+ iterations, ([0-9.]+) iterations/s")


def _run_example(log_dir: Path, workers: int, iterations: int, *extra: str,
                 env_extra: dict[str, str] | None = None) -> tuple[list[float], float]:
    """Run the example under msrun; return rank 0's per-iteration losses and its iterations per second."""
    command = msrun_command(EXAMPLE, "--tensor-model-parallel-size", str(workers), "--train-iters", str(iterations),
                            "--ai-framework", "mindspore", *extra, workers=workers, log_dir=log_dir)
    env = subprocess_env(bin_first=True, **(env_extra or {}))
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"msrun timed out after {exc.timeout} s\n{worker_logs(log_dir, '*.log')}")
    rank0 = log_dir / "worker_0.log"
    text = rank0.read_text(errors="replace") if rank0.exists() else ""
    assert done.returncode == 0, \
        f"msrun exited {done.returncode}\n{done.stdout[-3000:]}\n{worker_logs(log_dir, '*.log')}"
    losses = [float(value) for _, value in LOSS_LINE.findall(text)]
    assert len(losses) == iterations, \
        f"expected {iterations} loss lines, got {len(losses)}\n{worker_logs(log_dir, '*.log')}"
    speed = SPEED_LINE.search(text)
    assert speed is not None, f"no 'training done' line\n{worker_logs(log_dir, '*.log')}"
    return losses, float(speed.group(1))


@pytest.fixture(scope="module")
def tp1_traced(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[float], float, Path]:
    """The tp=1 run, its call trace written to the returned file (the losses are the untraced run's: the trace
    only counts calls)."""
    folder = tmp_path_factory.mktemp("tp1")
    report = folder / "trace.json"
    losses, speed = _run_example(folder / "logs", 1, ITERATIONS, env_extra={"MINDSPEED_MS_TRACE": "1",
                                                                            "MINDSPEED_MS_TRACE_FILE": str(report)})
    return losses, speed, report


@pytest.fixture(scope="module")
def tp1_run(tp1_traced: tuple[list[float], float, Path]) -> tuple[list[float], float]:
    return tp1_traced[0], tp1_traced[1]


def test_tp1_loss_falls_by_30_percent_without_nan(tp1_run: tuple[list[float], float]) -> None:
    losses, speed = tp1_run
    assert all(math.isfinite(loss) for loss in losses), losses
    assert len(losses) >= 20
    assert losses[0] > 4.0, f"first loss should be near ln(128)=4.85, got {losses[0]}"
    assert losses[-1] <= 0.7 * losses[0], f"loss fell only from {losses[0]} to {losses[-1]}: {losses}"
    print(f"tp=1: {speed:.2f} iterations/s, loss {losses[0]:.4f} -> {losses[-1]:.4f}")


def test_tp2_on_two_workers_matches_tp1_at_every_step(tmp_path: Path,
                                                      tp1_run: tuple[list[float], float]) -> None:
    # backend "nccl" as a GPU script would say: the CPU patch set runs it on gloo.
    losses, speed = _run_example(tmp_path, 2, TP2_ITERATIONS, "--distributed-backend", "nccl")
    reference, _ = tp1_run
    for step, (got, want) in enumerate(zip(losses, reference), start=1):
        assert math.isclose(got, want, rel_tol=1e-3), f"step {step}: tp=2 loss {got} != tp=1 loss {want}\n" \
                                                      f"tp=2 {losses}\ntp=1 {reference}"
    print(f"tp=2: {speed:.2f} iterations/s")


def test_example_is_a_pytorch_script_but_for_the_adaptor_import_and_the_flag() -> None:
    source = EXAMPLE.read_text()
    code_lines = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    body = source.split('"""', 2)[2]  # after the module docstring
    first_import = next(line for line in body.splitlines() if line.startswith(("import ", "from ")))
    assert first_import.startswith("import mindspeed_ms.adaptor")
    specific = [line for line in code_lines if re.search(r"mindspore|msadapter|mindspeed_ms", line, re.IGNORECASE)]
    body_specific = [line for line in specific if line in body.splitlines()]
    assert len(body_specific) == 2, body_specific  # the adaptor import and the --ai-framework choices
    assert "--ai-framework" in body_specific[1]


def test_trace_report_names_the_patched_functions_the_steps_went_through(
        tp1_traced: tuple[list[float], float, Path]) -> None:
    data = json.loads(tp1_traced[2].read_text())
    called = {entry["target"]: entry["calls"] for entry in data["called"]}
    # the cross-entropy fix runs once per step; the CPU in-place fixes run inside every forward/backward
    assert called.get("megatron.core.tensor_parallel.cross_entropy.VocabParallelCrossEntropy.calculate_gradients") \
        == ITERATIONS
    # megatron's core attention, one host Function: once per layer (2) and forward (one per step); the causal
    # mask's out-of-place fix is not reached then (the Function masks the scores itself)
    assert called.get("megatron.core.transformer.dot_product_attention.DotProductAttention.forward") \
        == 2 * ITERATIONS
    assert "megatron.core.transformer.utils.attention_mask_func" in data["not_called"]
    # the gradient norm: megatron's local l2_norm_impl, once per step, takes the norms on the host itself (no
    # torch.norm call left: every gradient is float32, contiguous, needs no gradient)
    assert called.get("megatron.core.optimizer.clip_grads.l2_norm_impl") == ITERATIONS
    assert "msadapter.ops.reduction.norm" not in called
    # "called" and "not_called" split the installed patches: nothing is in both, and a count is never 0
    assert set(called).isdisjoint(data["not_called"])
    assert 0 not in called.values()
    # DDP accumulates each gradient into param.main_grad, a view of its bucket's buffer, with add_
    assert called.get("mindspore.common.tensor.Tensor.add_", 0) > 0
    assert "apex" in data["not_called"]
