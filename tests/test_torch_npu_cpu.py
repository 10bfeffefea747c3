"""The four ``torch_npu`` patches of the ``msadapter_cpu`` provider, called on MSAdapter tensors.

Importing msadapter changes MindSpore's Tensor class for the whole process, so the calls run in
ops_workers/torch_npu_cpu_check.py under a fresh interpreter: MSAdapter's ``torch_npu`` imported,
the provider's patches applied, each patched function called as MindSpeed calls it and compared
with a NumPy reference, then reverted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent / "ops_workers" / "torch_npu_cpu_check.py"


def test_patched_torch_npu_ops_compute_what_numpy_computes_and_revert() -> None:
    env = {key: value for key, value in os.environ.items() if key != "MINDSPEED_MS_DEVICE"}
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, env=env)
    report = f"{proc.stdout}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, report
    assert "ALL PASSED" in proc.stdout, report
    assert "MISMATCH" not in proc.stdout, report
    # 4 patched, 5 numerical checks, 1 revert
    assert proc.stdout.count(": ok") == 10, report
