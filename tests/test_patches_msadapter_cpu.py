"""The four ``torch_npu`` patches of the ``msadapter_cpu`` provider, called on MSAdapter tensors.

Importing msadapter changes MindSpore's Tensor class for the whole process, so the calls run in
ops_workers/torch_npu_cpu_check.py under a fresh interpreter: MSAdapter's ``torch_npu`` imported,
the provider's patches applied, each patched function called as MindSpeed calls it and compared
with a NumPy reference, then reverted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _helpers import run_python, subprocess_env

SCRIPT = Path(__file__).parent / "ops_workers" / "torch_npu_cpu_check.py"


def test_patched_torch_npu_ops_compute_what_numpy_computes_and_revert() -> None:
    report = run_python(sys.executable, str(SCRIPT), env=subprocess_env(drop=("MINDSPEED_MS_DEVICE",)), timeout=300)
    assert "ALL PASSED" in report, report
    assert "MISMATCH" not in report, report
    # 4 patched, 5 numerical checks, 1 revert
    assert report.count(": ok") == 10, report
