"""Every op on MSAdapter tensors, forward and ``.backward()``, in a subprocess.

Importing msadapter changes MindSpore's Tensor class for the whole process, so the checks run in
ops_workers/msadapter_check.py under a fresh interpreter.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _helpers import run_python

SCRIPT = Path(__file__).parent / "ops_workers" / "msadapter_check.py"


def test_ops_accept_msadapter_tensors_and_backward_matches_mindspore_grad() -> None:
    report = run_python(sys.executable, str(SCRIPT), timeout=180)
    assert "ALL PASSED" in report, report
    assert "MISMATCH" not in report, report
    # 6 forward checks, 2 in-place checks, 12 gradients, 1 rejected call.
    assert report.count(": ok") == 21, report
