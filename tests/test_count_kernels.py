"""scripts/count_kernels.py: the kernel-count report (the counting itself runs the example; see its docstring)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "count_kernels.py"


def _result(backend: str, phases: dict[str, dict[str, float]], origins: dict[str, dict[str, dict[str, float]]],
            kernel_ms: dict[str, dict[str, float]] | None = None) -> dict[str, object]:
    result = {"backend": backend, "steps": 2, "phases": phases, "origins": origins}
    if kernel_ms is not None:  # files written before the kernels' times were recorded have none
        result["kernel_ms"] = kernel_ms
    return result


def test_report_puts_both_backends_side_by_side_with_origins(tmp_path: Path) -> None:
    ours = tmp_path / "ms.json"
    ours.write_text(json.dumps(_result(
        "mindspore", {"forward": {"MatMul": 9.0, "Reshape": 4.0}},
        {"forward": {"user tensor_parallel/layers.py:439 forward": {"MatMul": 9.0}, "autograd": {"Reshape": 4.0}}},
        {"forward": {"MatMul": 31.25, "Reshape": 0.5}})))
    reference = tmp_path / "pt.json"
    reference.write_text(json.dumps(_result("pytorch", {"forward": {"matmul": 9.0}, "backward": {"mm": 18.0}},
                                            {"forward": {"?": {"matmul": 9.0}}})))
    done = subprocess.run([sys.executable, str(SCRIPT), "--report", str(ours), str(reference)], capture_output=True,
                          text=True, timeout=60, check=True)
    lines = done.stdout.splitlines()
    assert "== forward: mindspore 13 (31.8 ms) vs pytorch 9 (0.0 ms) kernels per step (calls, kernel ms)" in lines
    assert "== backward: mindspore 0 (0.0 ms) vs pytorch 18 (0.0 ms) kernels per step (calls, kernel ms)" in lines
    matmul = next(line for line in lines if line.strip().startswith("MatMul"))
    assert matmul.split()[1:] == ["9.0", "31.25", "0.0", "0.00"]
    forward = lines[lines.index(next(line for line in lines if line.startswith("== forward"))) + 1:]
    assert forward[0].split()[0] == "MatMul"  # the op taking the most time first
    assert any("9.0  user tensor_parallel/layers.py:439 forward" in line for line in lines)
