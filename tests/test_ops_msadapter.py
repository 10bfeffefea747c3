"""Every op on MSAdapter tensors, forward and ``.backward()``, in a subprocess.

Importing msadapter changes MindSpore's Tensor class for the whole process, so the checks run in
ops_workers/msadapter_check.py under a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent / "ops_workers" / "msadapter_check.py"


def test_ops_accept_msadapter_tensors_and_backward_matches_mindspore_grad() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=180)
    report = f"{proc.stdout}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, report
    assert "ALL PASSED" in proc.stdout, report
    assert "MISMATCH" not in proc.stdout, report
    # 6 forward checks, 2 in-place checks, 12 gradients, 1 rejected call.
    assert proc.stdout.count(": ok") == 21, report
