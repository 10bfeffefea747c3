"""scripts/parity_sensitivity.py: the reference's own drift under a relative perturbation (real PyTorch runs)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from _helpers import ROOT, reference_python, subprocess_env

SCRIPT = ROOT / "scripts" / "parity_sensitivity.py"
TINY = ["--train-iters", "2", "--hidden-size", "32", "--num-attention-heads", "2", "--seq-length", "16",
        "--vocab-size", "64"]


def _parity_dir(root: Path) -> Path:
    """A parity work dir's per-step records: MindSpore 1e-3 off in loss at step 1, 1e-2 off in grad norm at step 2."""
    rows = {"reference": [(2.0, 1.0), (2.0, 1.0)], "candidate": [(2.002, 1.0), (2.0, 1.01)]}
    for side, values in rows.items():
        folder = root / side / "rank0"
        folder.mkdir(parents=True)
        folder.joinpath("steps.jsonl").write_text("".join(
            json.dumps({"step": step, "loss": loss, "grad_norm": norm}) + "\n"
            for step, (loss, norm) in enumerate(values, 1)))
    return root


def test_perturbed_reference_drift_is_measured_and_fails_beyond_tolerance(tmp_path: Path) -> None:
    done = subprocess.run(
        [reference_python(), str(SCRIPT), "--perturb", "weights", "--eps", "1e-2", "--json",
         "--parity-dir", str(_parity_dir(tmp_path / "parity")), "--", str(ROOT / "examples" / "pretrain_gpt.py"),
         *TINY],
        capture_output=True, text=True, timeout=300, env=subprocess_env(drop=("MINDSPEED_",)), cwd=str(ROOT))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-4000:]
    report = json.loads(done.stdout)
    steps = report["steps"]
    assert [row["step"] for row in steps] == [1, 2]
    # weights 1% off: the first step's loss moves, its grad norm beyond the 1e-3 tolerance
    assert steps[0]["loss_rel"] > 1e-7
    assert steps[0]["grad_norm_rel"] > 1e-3
    assert report["exceeded_at"][0] == 1
    assert abs(steps[0]["parity_loss_rel"] - 0.002 / 2.002) < 1e-9
    assert abs(steps[1]["parity_grad_norm_rel"] - 0.01 / 1.01) < 1e-9

