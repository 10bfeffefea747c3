"""Megatron's own training machinery on MindSpore (CPU, msrun workers on 127.0.0.1): each parallel layout
trains the one-worker model exactly.

examples/pretrain_gpt.py initialises every weight from its global name and feeds the same global batch
in every layout, so the per-iteration loss and grad norm of any layout must equal the one-worker run's:
within 1e-4 relative (loss) and 1e-3 (grad norm) at each of 12 iterations, with 4 micro-batches of 2
sequences per iteration (gradient accumulation through get_forward_backward_func). Each launch is
shared by the assertions that need it (a module-level cache); the whole file takes ~6-8 minutes on
two cores. The same configurations with timings: ``python examples/parallel_configs.py``.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from _helpers import EXAMPLE, msrun_command, subprocess_env, worker_logs

ITERATIONS = 12
BATCH = ("--micro-batch-size", "2", "--global-batch-size", "8")
LINE = re.compile(r"^iteration\s+(\d+)/\s*\d+ \| lm loss (\S+) \| grad norm (\S+) \|", re.MULTILINE)
SPEED = re.compile(r"training done: \d+ iterations, ([0-9.]+) iterations/s")
LOSS_RTOL = 1e-4
GRAD_NORM_RTOL = 1e-3
RECOMPUTE = ("--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1")
MOE = ("--num-experts", "4", "--moe-token-dispatcher-type", "alltoall")


@dataclass(frozen=True)
class Run:
    """Rank 0's report of one launch: iteration -> (loss, grad norm), and iterations per second."""

    steps: dict[int, tuple[float, float]]
    speed: float

    def losses(self) -> list[float]:
        return [self.steps[i][0] for i in sorted(self.steps)]


def _logs(log_dir: Path) -> str:
    return worker_logs(log_dir, "*.log", tail=5000)


def parse_run(text: str) -> Run:
    steps = {int(it): (float(loss), float(norm)) for it, loss, norm in LINE.findall(text)}
    speed = SPEED.search(text)
    return Run(steps, float(speed.group(1)) if speed else float("nan"))


def run_example(log_dir: Path, workers: int, *args: str) -> Run:
    """Run the example under msrun on ``workers`` CPU workers; return rank 0's report."""
    command = msrun_command(EXAMPLE, *args, "--ai-framework", "mindspore", workers=workers, log_dir=log_dir)
    try:
        done = subprocess.run(command, env=subprocess_env(bin_first=True), capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"msrun timed out after {exc.timeout} s\n{_logs(log_dir)}")
    assert done.returncode == 0, f"msrun exited {done.returncode}\n{done.stdout[-3000:]}\n{_logs(log_dir)}"
    return parse_run((log_dir / "worker_0.log").read_text(errors="replace"))


_RUNS: dict[str, Run] = {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    """Launch a named configuration once per module; later requests get the same report."""

    def get(name: str, workers: int, *args: str, iterations: int = ITERATIONS) -> Run:
        if name not in _RUNS:
            log_dir = tmp_path_factory.mktemp(name)
            run = run_example(log_dir, workers, "--train-iters", str(iterations), *BATCH, *args)
            assert run.steps, f"{name}: {sorted(run.steps)}\n{_logs(log_dir)}"
            assert max(run.steps) == iterations, f"{name}: {sorted(run.steps)}\n{_logs(log_dir)}"
            _RUNS[name] = run
        return _RUNS[name]

    yield get
    _RUNS.clear()


def assert_same_trajectory(name: str, got: Run, want: Run, first: int = 1) -> None:
    """Every iteration from ``first`` on: loss within 1e-4 relative, grad norm within 1e-3."""
    problems = []
    for step in sorted(got.steps):
        if step < first:
            continue
        (loss, norm), (ref_loss, ref_norm) = got.steps[step], want.steps[step]
        if abs(loss - ref_loss) > LOSS_RTOL * abs(ref_loss) or abs(norm - ref_norm) > GRAD_NORM_RTOL * abs(ref_norm):
            problems.append(f"iteration {step}: loss {loss} vs {ref_loss}, grad norm {norm} vs {ref_norm}")
    assert not problems, f"{name} differs from the one-worker run:\n" + "\n".join(problems)


def assert_loss_falls(name: str, run: Run) -> None:
    losses = run.losses()
    assert all(math.isfinite(loss) for loss in losses), losses
    assert losses[-1] <= 0.7 * losses[0], f"{name}: loss fell only from {losses[0]} to {losses[-1]}: {losses}"


def baseline(runs) -> Run:
    return runs("baseline", 1)


def test_one_worker_baseline_accumulates_4_micro_batches_and_learns(runs) -> None:
    run = baseline(runs)
    assert run.steps[1][0] > 4.0, f"first loss should be near ln(128)=4.85, got {run.steps[1][0]}"
    assert_loss_falls("baseline", run)


@pytest.mark.parametrize(("name", "workers", "args"), [
    ("dp2_ddp", 2, ()),
    ("dp2_distributed_optimizer", 2, ("--use-distributed-optimizer",)),
    ("dp2_distributed_optimizer_overlap", 2, ("--use-distributed-optimizer", "--overlap-grad-reduce",
                                               "--overlap-param-gather")),
    ("pp2_1f1b", 2, ("--pipeline-model-parallel-size", "2")),
    ("tp2_sequence_parallel", 2, ("--tensor-model-parallel-size", "2", "--sequence-parallel")),
    ("tp2_pp2", 4, ("--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2")),
])
def test_parallel_layout_matches_the_one_worker_run_at_every_iteration(runs, name: str, workers: int,
                                                                       args: tuple[str, ...]) -> None:
    run = runs(name, workers, *args)
    assert_same_trajectory(name, run, baseline(runs))
    assert_loss_falls(name, run)


def test_recompute_gives_identical_losses(runs) -> None:
    run = runs("recompute", 1, *RECOMPUTE)
    reference = baseline(runs)
    assert run.steps == reference.steps, f"recompute {run.steps}\nno recompute {reference.steps}"


def test_resume_at_iteration_5_continues_the_uninterrupted_run(runs, tmp_path: Path) -> None:
    # dp=2 with the distributed optimizer, megatron's torch_dist checkpoint: each rank saves and restores its
    # own optimizer shard, and the random generators come back (examples/gpt_checkpointing.py)
    checkpoint = tmp_path / "checkpoint"
    layout = ("--use-distributed-optimizer", "--save", str(checkpoint), "--save-interval", "5")
    runs("dp2_distopt_first_5", 2, *layout, iterations=5)
    assert (checkpoint / "latest_checkpointed_iteration.txt").read_text() == "5"
    assert {"__0_0.distcp", "__1_0.distcp", ".metadata", "common.pt"} <= {
        path.name for path in (checkpoint / "iter_0000005").iterdir()}
    resumed = runs("dp2_distopt_resumed", 2, "--use-distributed-optimizer", "--load", str(checkpoint))
    assert sorted(resumed.steps) == list(range(6, ITERATIONS + 1))
    uninterrupted = runs("dp2_distributed_optimizer", 2, "--use-distributed-optimizer")
    assert resumed.steps == {step: value for step, value in uninterrupted.steps.items() if step > 5}
    shutil.rmtree(checkpoint)


def test_moe_alltoall_with_expert_parallel_2_matches_one_expert_rank(runs) -> None:
    reference = runs("moe_ep1", 1, *MOE)
    run = runs("moe_ep2", 2, *MOE, "--expert-model-parallel-size", "2")
    assert_same_trajectory("moe ep=2", run, reference)
    assert_loss_falls("moe ep=2", run)
