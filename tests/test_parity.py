"""mindspeed_ms.parity: the example computes on MindSpore what it computes on PyTorch, and a wrong model is caught.

The end-to-end tests run the real thing: the example under torchrun with a CPU build of PyTorch (the reference
interpreter, ``.venv-ref`` that ``.ci/run`` builds, or ``$MINDSPEED_MS_REFERENCE_PYTHON``), then under msrun on
MindSpore + MSAdapter, and compare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _helpers import reference_python

from mindspeed_ms.parity.compare import Tolerances, compare_dumps, relative_difference
from mindspeed_ms.parity.runner import ParitySetupError, find_reference_python, run_parity

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "pretrain_gpt.py"
SOFTMAX = "decoder.layers.0.self_attention.core_attention.scale_mask_softmax"


# -- comparison of dumps (no runs) -------------------------------------------------------------------

def _dump(folder: Path, losses: list[float], grads: dict, outputs: dict) -> None:
    rank = folder / "rank0"
    rank.mkdir(parents=True)
    rank.joinpath("steps.jsonl").write_text("".join(
        json.dumps({"step": i + 1, "loss": loss, "grad_norm": 1.0 + i}) + "\n" for i, loss in enumerate(losses)))
    np.savez(rank / "grads.npz", **grads)
    np.savez(rank / "forward.npz", **outputs)
    rank.joinpath("forward_order.json").write_text(json.dumps(list(outputs)))


def test_relative_difference_is_norm_wise_and_safe_at_zero() -> None:
    assert relative_difference([0.0, 0.0], [0.0, 0.0]) == 0.0
    assert relative_difference([1.0, 0.0], [0.0, 0.0]) == float("inf")
    assert relative_difference([3.0, 4.0 + 5e-6], [3.0, 4.0]) == pytest.approx(1e-6)
    assert relative_difference([1.0, 2.0], [1.0, 2.0, 3.0]) == float("inf")
    assert relative_difference([float("nan")], [1.0]) == float("inf")


def test_compare_names_the_first_divergent_module_in_completion_order(tmp_path: Path) -> None:
    outputs = {"embedding": np.ones(4), "attention.softmax": np.ones(4), "attention": np.ones(4)}
    _dump(tmp_path / "ref", [4.0, 3.0], {"w": np.ones(3)}, outputs)
    broken = dict(outputs, **{"attention.softmax": np.full(4, 2.0), "attention": np.full(4, 3.0)})
    _dump(tmp_path / "cand", [4.0, 3.5], {"w": np.ones(3)}, broken)
    report = compare_dumps(tmp_path / "ref", tmp_path / "cand")
    assert not report.ok
    assert report.first_divergent_module == "attention.softmax"
    assert [s.ok for s in report.ranks[0].steps] == [True, False]
    assert report.max_loss_rel() == pytest.approx(0.5 / 3.0)


def test_compare_within_tolerance_is_ok_and_beyond_it_is_not(tmp_path: Path) -> None:
    _dump(tmp_path / "ref", [4.0], {"w": np.ones(3)}, {"m": np.ones(2)})
    _dump(tmp_path / "cand", [4.0 * (1 + 5e-5)], {"w": np.ones(3) * (1 + 5e-6)}, {"m": np.ones(2)})
    assert compare_dumps(tmp_path / "ref", tmp_path / "cand").ok
    assert not compare_dumps(tmp_path / "ref", tmp_path / "cand", Tolerances(gradient=1e-6)).ok
    assert not compare_dumps(tmp_path / "ref", tmp_path / "cand", Tolerances(loss=1e-5)).ok


def test_compare_reports_missing_steps_gradients_and_ranks(tmp_path: Path) -> None:
    _dump(tmp_path / "ref", [4.0, 3.0], {"w": np.ones(3), "b": np.ones(1)}, {})
    _dump(tmp_path / "cand", [4.0], {"w": np.ones(3)}, {})
    report = compare_dumps(tmp_path / "ref", tmp_path / "cand")
    assert not report.ok
    problems = report.ranks[0].problems
    assert any("2 steps" in p and "candidate 1" in p for p in problems)
    assert any("b only in the reference" in p for p in problems)
    (tmp_path / "ref" / "rank1").mkdir()
    assert any("rank 1" in p for r in compare_dumps(tmp_path / "ref", tmp_path / "cand").ranks for p in r.problems)


def test_missing_reference_interpreter_is_a_setup_error_saying_what_to_install(monkeypatch) -> None:
    monkeypatch.delenv("MINDSPEED_MS_REFERENCE_PYTHON", raising=False)
    with pytest.raises(ParitySetupError, match="torch==2.13.0"):
        find_reference_python(None)
    with pytest.raises(ParitySetupError, match="not an executable"):
        find_reference_python("/nonexistent/python")


def test_a_relative_reference_interpreter_is_made_absolute_without_leaving_its_venv(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    python = Path(reference_python())
    monkeypatch.chdir(python.parent)
    found = find_reference_python(f"./{python.name}")
    assert os.path.isabs(found) and Path(found).name == python.name  # not resolved to the base interpreter
    assert os.path.samefile(Path(found).parent, python.parent)


def test_cli_exits_2_with_the_reason_when_the_reference_is_missing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MINDSPEED_MS_REFERENCE_PYTHON"}
    done = subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", "parity", "--work-dir", str(tmp_path), "--",
                           str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert "--reference-python" in done.stderr


# -- the real thing ----------------------------------------------------------------------------------

@pytest.mark.parametrize("tp", [1, 2])
def test_example_on_mindspore_matches_pytorch_at_every_step(tmp_path: Path, tp: int) -> None:
    report = run_parity(EXAMPLE, ["--train-iters", "20", "--tensor-model-parallel-size", str(tp)],
                        reference_python=reference_python(), nproc=tp, work_dir=tmp_path)
    assert len(report.ranks) == tp
    for rank in report.ranks:
        assert not rank.problems, rank.problems
        assert len(rank.steps) == 20
        for step in rank.steps:
            assert step.loss_rel <= 1e-4, (rank.rank, step)
            assert step.grad_norm_rel <= 1e-3, (rank.rank, step)
        assert len(rank.gradients) >= 20 and all(g.rel <= 1e-5 for g in rank.gradients), rank.gradients[:3]
        assert len(rank.forward) > 20 and rank.first_divergent_module is None
    assert report.ok


BROKEN_SCRIPT = """
import mindspeed_ms.adaptor  # first, as in the example
import sys
from mindspeed_ms.framework import get_ai_framework

if get_ai_framework() == "mindspore":
    from mindspore import ops
    from mindspeed_ms.compat import inplace
    import megatron.core.transformer.dot_product_attention as attention

    def old_attention_mask_func(scores, mask):
        # mindspeed_ms before the fix: masked_fill_ = out of place, then MSAdapter's copy_ into the view of the
        # attention scores, which does not reach it on the CPU backend (the causal mask is silently lost)
        inplace._unpatched_copy()(scores, ops.masked_fill(scores, mask, -10000.0))
        return scores

    attention.attention_mask_func = old_attention_mask_func  # what DotProductAttention hands to its softmax

sys.path.insert(0, {examples!r})
import pretrain_gpt
pretrain_gpt.main()
"""


def test_the_old_masked_fill_fails_parity_and_names_the_attention_softmax(tmp_path: Path) -> None:
    script = tmp_path / "broken_gpt.py"
    script.write_text(textwrap.dedent(BROKEN_SCRIPT.format(examples=str(EXAMPLE.parent))))
    done = subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", "parity", "--json", "--reference-python",
                           reference_python(), "--work-dir", str(tmp_path / "work"), "--", str(script),
                           "--train-iters", "3"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["first_divergent_module"].endswith(SOFTMAX)  # under megatron's DDP wrapper: "module." first
    assert report["max_loss_rel"] > 1e-3
