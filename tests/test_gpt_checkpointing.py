"""Megatron's checkpoints written by examples/pretrain_gpt.py (examples/gpt_checkpointing.py) on one backend
and resumed on the other.

The uninterrupted PyTorch run (the reference interpreter, torchrun, the ``pytorch_cpu`` provider) trains 10
iterations and saves at 5; MindSpore (msrun) saves at 5 too. Each run resumed from iteration 5 on the other
backend must give the uninterrupted PyTorch run's losses at 6..10 within 1e-4 relative, in both formats
(``torch_dist``: megatron-core's dist_checkpointing; ``torch``: Megatron-LM's legacy per-rank torch.save),
and a data-parallel-2 run with the distributed optimizer (its optimizer state sharded over the two ranks)
saved on MindSpore resumes on PyTorch. Across backends the torch generator's state cannot be restored
(``--no-load-rng``, as Megatron-LM offers); the example draws no random numbers while training. Every
launch is shared through a module-level cache (8 launches, ~3 minutes on two cores).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from _helpers import (
    LAYOUTS,
    ROOT,
    free_port,
    layout_output,
    msrun_command,
    reference_python,
    subprocess_env,
    worker_logs,
)

BATCH = ("--micro-batch-size", "2", "--global-batch-size", "8")
LINE = re.compile(r"^iteration\s+(\d+)/\s*\d+ \| lm loss (\S+) \|", re.MULTILINE)
LOSS_RTOL = 1e-4
RESUME_AT = 5
ITERATIONS = 10
_RUNS: dict[str, dict[int, float]] = {}
_LAUNCHED: dict[str, str] = {}  # launch -> '' once it ran, else why it failed


def _environment() -> dict[str, str]:
    return subprocess_env(drop=("MINDSPEED_MS_PARITY", "MINDSPEED_AI_FRAMEWORK"), bin_first=True,
                          PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def launch(backend: str, folder: Path, workers: int, runs: list[tuple[str, list[str]]]) -> dict[str, dict[int, float]]:
    """Run the example's ``runs`` (name, flags) in order in one launch on ``backend`` ("pytorch": torchrun,
    "mindspore": msrun); return rank 0's losses of each run."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "runs.json").write_text(json.dumps([(name, [*BATCH, *args]) for name, args in runs]))
    if backend == "pytorch":
        command = [reference_python(), "-m", "torch.distributed.run", f"--nproc-per-node={workers}",
                   f"--master-port={free_port()}", str(LAYOUTS), str(folder / "runs.json")]
    else:
        command = msrun_command(LAYOUTS, str(folder / "runs.json"), "--ai-framework", "mindspore", workers=workers,
                                log_dir=folder / "logs")
    done = subprocess.run(command, env=_environment(), capture_output=True, text=True, timeout=1800, cwd=folder)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-4000:]}\n{worker_logs(folder / 'logs')}"
    text = done.stdout if backend == "pytorch" else (folder / "logs" / "worker_0.log").read_text(errors="replace")
    losses = {name: {int(step): float(loss) for step, loss in LINE.findall(layout_output(text, name))}
              for name, _ in runs}
    assert all(losses.values()), f"{' '.join(command)}: a run has no losses {losses}\n{text[-4000:]}"
    return losses


def _saves(ckpt_format: str, iterations: int, *extra: str) -> list[str]:
    """Flags of a run that saves at iteration 5 (``--save`` is filled in with the run's own folder)."""
    return ["--train-iters", str(iterations), "--save", "", "--save-interval", str(RESUME_AT),
            "--ckpt-format", ckpt_format, *extra]


def _resumes(source: str, ckpt_format: str, *extra: str) -> list[str]:
    """Flags of a run that resumes from run ``source``'s checkpoint (``--load`` is filled in with its folder)."""
    return ["--train-iters", str(ITERATIONS), "--load", source, "--ckpt-step", str(RESUME_AT),
            "--ckpt-format", ckpt_format, "--no-load-rng", *extra]


DISTOPT = ("--use-distributed-optimizer",)
#: name -> (launch, flags): a launch (backend, workers, what it needs first) runs its runs in this order
RUNS: dict[str, tuple[str, list[str]]] = {
    "pytorch_torch_dist_1w_saves": ("pytorch_1w", _saves("torch_dist", ITERATIONS)),  # the uninterrupted run
    "pytorch_torch_1w_saves": ("pytorch_1w", _saves("torch", ITERATIONS)),
    "mindspore_1w_resumes_pytorch_torch_dist_1w_saves": (
        "mindspore_1w", _resumes("pytorch_torch_dist_1w_saves", "torch_dist")),
    "mindspore_1w_resumes_pytorch_torch_1w_saves": ("mindspore_1w", _resumes("pytorch_torch_1w_saves", "torch")),
    "mindspore_torch_1w_saves": ("mindspore_1w", _saves("torch", RESUME_AT)),
    "pytorch_1w_resumes_mindspore_torch_1w_saves": ("pytorch_1w_again", _resumes("mindspore_torch_1w_saves", "torch")),
    "mindspore_torch_dist_2w_saves": ("mindspore_2w", _saves("torch_dist", RESUME_AT, *DISTOPT)),
    "pytorch_2w_resumes_mindspore_torch_dist_2w_saves": (
        "pytorch_2w", _resumes("mindspore_torch_dist_2w_saves", "torch_dist", *DISTOPT)),
}
#: launch -> (backend, workers, the launch that must have run first)
LAUNCHES = {"pytorch_1w": ("pytorch", 1, None), "mindspore_1w": ("mindspore", 1, "pytorch_1w"),
            "pytorch_1w_again": ("pytorch", 1, "mindspore_1w"), "mindspore_2w": ("mindspore", 2, None),
            "pytorch_2w": ("pytorch", 2, "mindspore_2w")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    """``runs(name)``: the named run's losses (its launch, and what that launch needs, launched once per module);
    ``runs.checkpoint(name)``: the folder the run saved into."""
    root = tmp_path_factory.mktemp("checkpoints")

    def checkpoint(name: str) -> Path:
        return root / "checkpoints" / name

    def resolved(name: str, flags: list[str]) -> list[str]:
        flags = list(flags)
        if "--save" in flags:
            flags[flags.index("--save") + 1] = str(checkpoint(name))
        if "--load" in flags:
            flags[flags.index("--load") + 1] = str(checkpoint(flags[flags.index("--load") + 1]))
        return flags

    def start(name: str) -> None:
        backend, workers, needs = LAUNCHES[name]
        if needs is not None:
            start(needs)
        if name in _LAUNCHED:
            if _LAUNCHED[name]:
                pytest.fail(f"launch {name} failed (in an earlier test):\n{_LAUNCHED[name]}")
            return
        _LAUNCHED[name] = "did not finish"
        members = [(run, resolved(run, flags)) for run, (where, flags) in RUNS.items() if where == name]
        try:
            _RUNS.update(launch(backend, root / name, workers, members))
        except BaseException as exc:
            _LAUNCHED[name] = str(exc)[-8000:]
            raise
        _LAUNCHED[name] = ""

    def runs(name: str) -> dict[int, float]:
        start(RUNS[name][0])
        return _RUNS[name]

    runs.checkpoint = checkpoint  # type: ignore[attr-defined]
    yield runs
    _RUNS.clear()
    _LAUNCHED.clear()


def reference(runs) -> dict[int, float]:
    """The uninterrupted PyTorch run (10 iterations, saving torch_dist at 5)."""
    return runs("pytorch_torch_dist_1w_saves")


def assert_continues(name: str, got: dict[int, float], want: dict[int, float]) -> None:
    assert sorted(got) == list(range(RESUME_AT + 1, ITERATIONS + 1)), f"{name}: iterations {sorted(got)}"
    problems = [f"iteration {step}: {got[step]} vs {want[step]}" for step in sorted(got)
                if abs(got[step] - want[step]) > LOSS_RTOL * abs(want[step])]
    assert not problems, f"{name} left the uninterrupted PyTorch trajectory:\n" + "\n".join(problems)


def test_pytorch_writes_megatrons_layouts(runs) -> None:
    reference(runs)
    dist = runs.checkpoint("pytorch_torch_dist_1w_saves")
    legacy = runs.checkpoint("pytorch_torch_1w_saves")
    assert (dist / "latest_checkpointed_iteration.txt").read_text() == str(ITERATIONS)
    assert {".metadata", "common.pt", "metadata.json"} <= {path.name for path in (dist / "iter_0000005").iterdir()}
    assert (legacy / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt").is_file()
    assert (legacy / "latest_checkpointed_iteration.txt").read_text() == str(ITERATIONS)


@pytest.mark.parametrize("ckpt_format", ["torch_dist", "torch"])
def test_mindspore_resumes_a_pytorch_checkpoint_on_its_trajectory(runs, ckpt_format: str) -> None:
    assert_continues(f"MindSpore from PyTorch's {ckpt_format}",
                     runs(f"mindspore_1w_resumes_pytorch_{ckpt_format}_1w_saves"), reference(runs))


def test_pytorch_resumes_a_mindspore_legacy_checkpoint_on_its_trajectory(runs) -> None:
    first = runs("mindspore_torch_1w_saves")
    assert sorted(first) == list(range(1, RESUME_AT + 1))
    assert all(abs(first[step] - reference(runs)[step]) <= LOSS_RTOL * reference(runs)[step] for step in first)
    assert (runs.checkpoint("mindspore_torch_1w_saves") / "iter_0000005" / "mp_rank_00" /
            "model_optim_rng.pt").is_file()
    assert_continues("PyTorch from MindSpore's torch", runs("pytorch_1w_resumes_mindspore_torch_1w_saves"),
                     reference(runs))


def test_pytorch_resumes_a_mindspore_dp2_distributed_optimizer_checkpoint(runs) -> None:
    runs("mindspore_torch_dist_2w_saves")
    files = {path.name for path in (runs.checkpoint("mindspore_torch_dist_2w_saves") / "iter_0000005").iterdir()}
    assert {"__0_0.distcp", "__1_0.distcp", ".metadata"} <= files  # each rank wrote its optimizer shard
    assert_continues("PyTorch (dp=2, distributed optimizer) from MindSpore's torch_dist",
                     runs("pytorch_2w_resumes_mindspore_torch_dist_2w_saves"), reference(runs))
