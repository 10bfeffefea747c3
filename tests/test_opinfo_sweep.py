"""PyTorch's own OpInfo samples (torch.testing's op_db) replayed on our backend, a bounded subset in the default run:
the first samples of the OpInfos of the field's most called ops. The full sweep over every OpInfo of a field op
(~13,600 samples, ~8 minutes on 2 cores) is ``scripts/opinfo_sweep.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _helpers import reference_python

ROOT = Path(__file__).resolve().parents[1]
#: OpInfos of the field's most called ops (Tensor.__getitem__, __mul__, __add__, view) and some whose fixes came
#: from the sweep (any, squeeze, nonzero)
SUBSET = ("__getitem__", "mul", "add", "view", "any", "squeeze", "nonzero")


def test_opinfo_subset_has_no_unlisted_divergence() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "opinfo_sweep.py"), "--max", "2",
                           "--ours", sys.executable, "--reference", reference_python(), *SUBSET],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    report = done.stdout
    assert "samples compared" in report, done.stderr[-3000:]
    compared = int(report.split(" samples compared")[0].rsplit(" ", 1)[-1])
    assert compared >= 150, report[:500]
    assert done.returncode == 0, "divergences not in KNOWN_OPINFO:\n" + "\n".join(
        line for line in report.splitlines() if line.startswith("NEW"))[:6000]
