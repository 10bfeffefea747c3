"""Megatron's parallel training machinery on MindSpore computes what it computes on PyTorch.

``mindspeed-ms parity`` runs examples/pretrain_gpt.py under torchrun on a CPU build of PyTorch (the
reference interpreter: ``.venv-ref`` as .ci/run builds it, or ``$MINDSPEED_MS_REFERENCE_PYTHON``) and
under msrun on MindSpore + MSAdapter, from the same weights and batches. Each iteration's loss (rank 0's
line, averaged over micro-batches and data-parallel ranks) and grad norm must agree within 1e-4 / 1e-3
relative at each of 10 iterations; for data parallel the tool's own per-micro-batch comparison (loss,
gradient norm, first-step gradients and module outputs on every rank) must pass too.
"""

from __future__ import annotations

import re
from pathlib import Path

from _helpers import EXAMPLE, reference_python

from mindspeed_ms.bootstrap.parity_runner import run_parity

ITERATIONS = 10
LINE = re.compile(r"^iteration\s+(\d+)/\s*\d+ \| lm loss (\S+) \| grad norm (\S+) \|", re.MULTILINE)


def _iterations(log: Path) -> dict[int, tuple[float, float]]:
    text = log.read_text(errors="replace")
    return {int(it): (float(loss), float(norm)) for it, loss, norm in LINE.findall(text)}


def _parity(tmp_path: Path, workers: int, *args: str):
    report = run_parity(EXAMPLE, ["--train-iters", str(ITERATIONS), "--micro-batch-size", "2",
                                  "--global-batch-size", "8", *args],
                        reference_python=reference_python(), nproc=workers, work_dir=tmp_path)
    reference = _iterations(tmp_path / "reference.log")
    candidate = _iterations(tmp_path / "candidate_logs" / "worker_0.log")
    assert sorted(reference) == list(range(1, ITERATIONS + 1)), reference
    assert sorted(candidate) == sorted(reference), candidate
    problems = [f"iteration {i}: MindSpore {candidate[i]} vs PyTorch {reference[i]}" for i in sorted(reference)
                if abs(candidate[i][0] - reference[i][0]) > 1e-4 * abs(reference[i][0])
                or abs(candidate[i][1] - reference[i][1]) > 1e-3 * abs(reference[i][1])]
    assert not problems, "\n".join(problems)
    return report


def test_data_parallel_2_with_ddp_matches_pytorch_at_every_iteration_and_micro_batch(tmp_path: Path) -> None:
    report = _parity(tmp_path, 2)
    assert len(report.ranks) == 2
    for rank in report.ranks:
        assert not rank.problems, rank.problems
        assert len(rank.steps) == 2 * ITERATIONS  # 2 micro-batches per iteration on each data-parallel rank
    assert report.ok, report.to_dict()


def test_moe_expert_parallel_2_alltoall_matches_pytorch_at_every_iteration(tmp_path: Path) -> None:
    _parity(tmp_path, 2, "--num-experts", "4", "--expert-model-parallel-size", "2")
