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

import os
import re
import subprocess
from pathlib import Path

import pytest
from _helpers import EXAMPLE, ROOT, free_port, msrun_command, reference_python, subprocess_env, worker_logs

BATCH = ("--micro-batch-size", "2", "--global-batch-size", "8")
LINE = re.compile(r"^iteration\s+(\d+)/\s*\d+ \| lm loss (\S+) \|", re.MULTILINE)
LOSS_RTOL = 1e-4
RESUME_AT = 5
ITERATIONS = 10
_RUNS: dict[str, dict[int, float]] = {}


def _environment() -> dict[str, str]:
    return subprocess_env(drop=("MINDSPEED_MS_PARITY", "MINDSPEED_AI_FRAMEWORK"), bin_first=True,
                          PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def launch(backend: str, folder: Path, workers: int, *args: str) -> dict[int, float]:
    """Run the example on ``backend`` ("pytorch": torchrun, "mindspore": msrun); return rank 0's losses."""
    folder.mkdir(parents=True, exist_ok=True)
    if backend == "pytorch":
        command = [reference_python(), "-m", "torch.distributed.run", f"--nproc-per-node={workers}",
                   f"--master-port={free_port()}", str(EXAMPLE), *BATCH, *args]
    else:
        command = msrun_command(EXAMPLE, *BATCH, *args, "--ai-framework", "mindspore", workers=workers,
                                log_dir=folder / "logs")
    done = subprocess.run(command, env=_environment(), capture_output=True, text=True, timeout=900, cwd=folder)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-4000:]}\n{worker_logs(folder / 'logs')}"
    text = done.stdout if backend == "pytorch" else (folder / "logs" / "worker_0.log").read_text(errors="replace")
    return {int(step): float(loss) for step, loss in LINE.findall(text)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    """``runs(name)``: the named launch's losses, launched once per module; its folder is ``runs.folder(name)``."""
    root = tmp_path_factory.mktemp("checkpoints")

    def saved(backend: str, ckpt_format: str, workers: int = 1, *extra: str) -> str:
        name = f"{backend}_{ckpt_format}_{workers}w_saves"
        if name not in _RUNS:
            iterations = ITERATIONS if backend == "pytorch" and workers == 1 else RESUME_AT
            _RUNS[name] = launch(backend, root / name, workers, "--train-iters", str(iterations),
                                 "--save", str(root / name / "ckpt"), "--save-interval", str(RESUME_AT),
                                 "--ckpt-format", ckpt_format, *extra)
        return name

    def resumed(backend: str, source: str, ckpt_format: str, workers: int = 1, *extra: str) -> dict[int, float]:
        name = f"{backend}_{workers}w_resumes_{source}"
        if name not in _RUNS:
            _RUNS[name] = launch(backend, root / name, workers, "--train-iters", str(ITERATIONS),
                                 "--load", str(root / source / "ckpt"), "--ckpt-step", str(RESUME_AT),
                                 "--ckpt-format", ckpt_format, "--no-load-rng", *extra)
        return _RUNS[name]

    runs.root, runs.saved, runs.resumed = root, saved, resumed  # type: ignore[attr-defined]
    yield runs
    _RUNS.clear()


def reference(runs) -> dict[int, float]:
    """The uninterrupted PyTorch run (10 iterations, saving torch_dist at 5)."""
    return _RUNS[runs.saved("pytorch", "torch_dist")]


def assert_continues(name: str, got: dict[int, float], want: dict[int, float]) -> None:
    assert sorted(got) == list(range(RESUME_AT + 1, ITERATIONS + 1)), f"{name}: iterations {sorted(got)}"
    problems = [f"iteration {step}: {got[step]} vs {want[step]}" for step in sorted(got)
                if abs(got[step] - want[step]) > LOSS_RTOL * abs(want[step])]
    assert not problems, f"{name} left the uninterrupted PyTorch trajectory:\n" + "\n".join(problems)


def test_pytorch_writes_megatrons_layouts(runs) -> None:
    dist = runs.root / runs.saved("pytorch", "torch_dist") / "ckpt"
    legacy = runs.root / runs.saved("pytorch", "torch") / "ckpt"
    assert (dist / "latest_checkpointed_iteration.txt").read_text() == str(ITERATIONS)
    assert {".metadata", "common.pt", "metadata.json"} <= {path.name for path in (dist / "iter_0000005").iterdir()}
    assert (legacy / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt").is_file()
    assert (legacy / "latest_checkpointed_iteration.txt").read_text() == str(ITERATIONS)


@pytest.mark.parametrize("ckpt_format", ["torch_dist", "torch"])
def test_mindspore_resumes_a_pytorch_checkpoint_on_its_trajectory(runs, ckpt_format: str) -> None:
    source = runs.saved("pytorch", ckpt_format)
    assert_continues(f"MindSpore from PyTorch's {ckpt_format}", runs.resumed("mindspore", source, ckpt_format),
                     reference(runs))


def test_pytorch_resumes_a_mindspore_legacy_checkpoint_on_its_trajectory(runs) -> None:
    source = runs.saved("mindspore", "torch")
    first = _RUNS[source]
    assert all(abs(first[step] - reference(runs)[step]) <= LOSS_RTOL * reference(runs)[step] for step in first)
    assert (runs.root / source / "ckpt" / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt").is_file()
    assert_continues("PyTorch from MindSpore's torch", runs.resumed("pytorch", source, "torch"), reference(runs))


def test_pytorch_resumes_a_mindspore_dp2_distributed_optimizer_checkpoint(runs) -> None:
    layout = ("--use-distributed-optimizer",)
    source = runs.saved("mindspore", "torch_dist", 2, *layout)
    files = {path.name for path in (runs.root / source / "ckpt" / "iter_0000005").iterdir()}
    assert {"__0_0.distcp", "__1_0.distcp", ".metadata"} <= files  # each rank wrote its optimizer shard
    assert_continues("PyTorch (dp=2, distributed optimizer) from MindSpore's torch_dist",
                     runs.resumed("pytorch", source, "torch_dist", 2, *layout), reference(runs))
