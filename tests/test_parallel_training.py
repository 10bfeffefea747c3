"""Megatron's own training machinery on MindSpore (CPU, msrun workers on 127.0.0.1): each parallel layout
trains the one-worker model exactly.

examples/pretrain_gpt.py initialises every weight from its global name and feeds the same global batch
in every layout, so the per-iteration loss and grad norm of any layout must equal the one-worker run's:
within 1e-4 relative (loss) and 1e-3 (grad norm) at each of 12 iterations, with 4 micro-batches of 2
sequences per iteration (gradient accumulation through get_forward_backward_func). The layouts with the
same number of workers run one after the other in one msrun launch (tests/example_workers/layouts.py: each
layout's main() builds its own model-parallel groups, which are torn down after it, and megatron's parallel
state is reset to a fresh process's), so the file pays three launches (1, 2 and 4 workers), not twelve;
each test asserts on its layouts' parts, including the parallel sizes megatron reported for them. The whole
file takes ~4-5 minutes on two cores. The same configurations, one launch each, with timings:
``python examples/parallel_configs.py``.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from _helpers import LAYOUTS as LAYOUT_DRIVER
from _helpers import layout_output, msrun_command, subprocess_env, worker_logs

ITERATIONS = 12
BATCH = ("--micro-batch-size", "2", "--global-batch-size", "8")
LINE = re.compile(r"^iteration\s+(\d+)/\s*\d+ \| lm loss (\S+) \| grad norm (\S+) \|", re.MULTILINE)
SPEED = re.compile(r"training done: \d+ iterations, ([0-9.]+) iterations/s")
SIZES = re.compile(r"^=== sizes (\{.*\})$", re.MULTILINE)
LOSS_RTOL = 1e-4
GRAD_NORM_RTOL = 1e-3
RECOMPUTE = ("--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1")
MOE = ("--num-experts", "4", "--moe-token-dispatcher-type", "alltoall")


@dataclass(frozen=True)
class Run:
    """Rank 0's report of one layout: iteration -> (loss, grad norm), iterations per second, parallel sizes."""

    steps: dict[int, tuple[float, float]]
    speed: float
    sizes: dict[str, int]

    def losses(self) -> list[float]:
        return [self.steps[i][0] for i in sorted(self.steps)]


def _logs(log_dir: Path) -> str:
    return worker_logs(log_dir, "*.log", tail=5000)


def parse_run(text: str) -> Run:
    steps = {int(it): (float(loss), float(norm)) for it, loss, norm in LINE.findall(text)}
    speed = SPEED.search(text)
    sizes = SIZES.search(text)
    return Run(steps, float(speed.group(1)) if speed else float("nan"), json.loads(sizes.group(1)) if sizes else {})


def expected_sizes(workers: int, args: tuple[str, ...]) -> dict[str, int]:
    """The tensor, pipeline, data and expert parallel sizes the layout's flags ask for on ``workers`` workers."""

    def flag(name: str) -> int:
        return int(args[args.index(name) + 1]) if name in args else 1

    tp, pp = flag("--tensor-model-parallel-size"), flag("--pipeline-model-parallel-size")
    return {"tp": tp, "pp": pp, "dp": workers // (tp * pp), "ep": flag("--expert-model-parallel-size")}


#: name -> (workers, flags, iterations); "{checkpoint}" is the module's checkpoint folder
LAYOUTS: dict[str, tuple[int, tuple[str, ...], int]] = {
    "baseline": (1, (), ITERATIONS),
    "recompute": (1, RECOMPUTE, ITERATIONS),
    "moe_ep1": (1, MOE, ITERATIONS),
    "dp2_ddp": (2, (), ITERATIONS),
    "dp2_distributed_optimizer": (2, ("--use-distributed-optimizer",), ITERATIONS),
    "dp2_distributed_optimizer_overlap": (2, ("--use-distributed-optimizer", "--overlap-grad-reduce",
                                              "--overlap-param-gather"), ITERATIONS),
    "pp2_1f1b": (2, ("--pipeline-model-parallel-size", "2"), ITERATIONS),
    "tp2_sequence_parallel": (2, ("--tensor-model-parallel-size", "2", "--sequence-parallel"), ITERATIONS),
    # dp=2 with the distributed optimizer, megatron's torch_dist checkpoint saved at 5, then resumed from it
    "dp2_distopt_first_5": (2, ("--use-distributed-optimizer", "--save", "{checkpoint}", "--save-interval", "5"), 5),
    "dp2_distopt_resumed": (2, ("--use-distributed-optimizer", "--load", "{checkpoint}"), ITERATIONS),
    "moe_ep2": (2, (*MOE, "--expert-model-parallel-size", "2"), ITERATIONS),
    "tp2_pp2": (4, ("--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2"), ITERATIONS),
}


@dataclass
class Launch:
    """One msrun launch running several layouts one after the other: its exit status and its logs."""

    returncode: int
    log_dir: Path
    output: str

    def layout(self, name: str) -> str:
        """Rank 0's output for layout ``name``; '' if it did not finish."""
        log = self.log_dir / "worker_0.log"
        return layout_output(log.read_text(errors="replace") if log.exists() else "", name)


def launch_layouts(log_dir: Path, workers: int, layouts: list[tuple[str, list[str]]]) -> Launch:
    """Run ``layouts`` (name, flags) of the example, in order, in one msrun launch of ``workers`` CPU workers."""
    runs = log_dir.parent / f"{log_dir.name}.json"
    runs.write_text(json.dumps(layouts))
    command = msrun_command(LAYOUT_DRIVER, str(runs), "--ai-framework", "mindspore", workers=workers, log_dir=log_dir)
    try:
        done = subprocess.run(command, env=subprocess_env(bin_first=True), capture_output=True, text=True,
                              timeout=1800)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"msrun timed out after {exc.timeout} s\n{_logs(log_dir)}")
    return Launch(done.returncode, log_dir, done.stdout[-3000:] + done.stderr[-3000:])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    """``runs(name)``: rank 0's report of a layout; the first request for a number of workers launches every
    layout of that many workers (in LAYOUTS' order), later requests read that launch's logs."""
    root = tmp_path_factory.mktemp("layouts")
    launches: dict[int, Launch] = {}

    def get(name: str) -> Run:
        workers, args, iterations = LAYOUTS[name]
        if workers not in launches:
            layouts = [(other, ["--train-iters", str(its), *BATCH,
                                *(arg.format(checkpoint=root / "checkpoint") for arg in flags)])
                       for other, (count, flags, its) in LAYOUTS.items() if count == workers]
            launches[workers] = launch_layouts(root / f"workers_{workers}", workers, layouts)
        launch = launches[workers]
        run = parse_run(launch.layout(name))
        where = f"{name} (msrun exited {launch.returncode}): {sorted(run.steps)}\n{launch.output}\n" \
                f"{_logs(launch.log_dir)}"
        assert run.steps, where
        assert max(run.steps) == iterations, where
        assert run.sizes == expected_sizes(workers, args), where  # the layout megatron built is the one asked for
        return run

    get.root = root  # type: ignore[attr-defined]
    return get


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
    return runs("baseline")


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
    assert LAYOUTS[name][:2] == (workers, args)
    run = runs(name)
    assert_same_trajectory(name, run, baseline(runs))
    assert_loss_falls(name, run)


def test_recompute_gives_identical_losses(runs) -> None:
    run = runs("recompute")
    reference = baseline(runs)
    assert run.steps == reference.steps, f"recompute {run.steps}\nno recompute {reference.steps}"


def test_resume_at_iteration_5_continues_the_uninterrupted_run(runs) -> None:
    # dp=2 with the distributed optimizer, megatron's torch_dist checkpoint: each rank saves and restores its
    # own optimizer shard, and the random generators come back (examples/gpt_checkpointing.py)
    checkpoint = runs.root / "checkpoint"
    runs("dp2_distopt_first_5")
    assert (checkpoint / "latest_checkpointed_iteration.txt").read_text() == "5"
    assert {"__0_0.distcp", "__1_0.distcp", ".metadata", "common.pt"} <= {
        path.name for path in (checkpoint / "iter_0000005").iterdir()}
    resumed = runs("dp2_distopt_resumed")
    assert sorted(resumed.steps) == list(range(6, ITERATIONS + 1))
    uninterrupted = runs("dp2_distributed_optimizer")
    assert resumed.steps == {step: value for step, value in uninterrupted.steps.items() if step > 5}
    shutil.rmtree(checkpoint)


def test_moe_alltoall_with_expert_parallel_2_matches_one_expert_rank(runs) -> None:
    reference = runs("moe_ep1")
    run = runs("moe_ep2")
    assert_same_trajectory("moe ep=2", run, reference)
    assert_loss_falls("moe ep=2", run)
