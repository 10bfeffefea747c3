"""scripts/op_inventory.py (issue 19 item 1) on a small source tree written to tmp_path, run with the reference
interpreter (real PyTorch lists the Tensor methods and resolves torch names)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _helpers import reference_python, write_files

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "op_inventory.py"

SOURCES = {
    "pkg/__init__.py": "",
    "pkg/model.py": """
        import torch
        import torch.nn.functional as F
        import torch.distributed as dist
        from torch import nn
        from torch.distributed import all_reduce as reduce_all
        import os

        def forward(x, w, buffer, parts):
            y = F.softmax(torch.matmul(x, w), dim=-1)
            z = nn.functional.gelu(y) + y
            z += 1
            z[0] = 2
            buffer.view(-1).copy_(z.view(-1))
            dist.all_reduce(buffer)
            reduce_all(buffer)
            name = os.path.join("a", "b")
            head = "a,b".split(",")
            width: torch.Tensor = x.size(1)
            return z / 2, torch.nn.Linear(2, 2)
    """,
    "pkg/loader.py": "import torch\n\ndef load():\n    return torch.zeros(3)\n",
    "pkg/unused.py": "import torch\n\ndef unused():\n    return torch.ones(2)\n",
    "pkg/legacy/old.py": "import torch\n\ndef old():\n    return torch.eye(2)\n",
    "entry.py": "from pkg import model\nfrom pkg.loader import load\n",
}


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run (one reference interpreter start) with a trace and an entry."""
    tmp_path = tmp_path_factory.mktemp("field")
    write_files(tmp_path, SOURCES)
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(["torch.matmul", "Tensor.__iadd__", "torch.cat"]))
    out = tmp_path / "inventory.json"
    done = subprocess.run([reference_python(), str(SCRIPT), f"field={tmp_path / 'pkg'}", "--out", str(out),
                           "--gpt-trace", str(trace), "--llm-entry", str(tmp_path / "entry.py")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_counts_functions_methods_and_operators_however_imported(inventory: dict[str, Any]) -> None:
    ops = inventory["ops"]
    calls = {name: entry["calls"]["field"] for name, entry in ops.items()}
    assert calls["torch.nn.functional.softmax"] == 1
    assert calls["torch.nn.functional.gelu"] == 1
    assert calls["torch.matmul"] == 1
    assert calls["torch.zeros"] == 1
    assert calls["torch.ones"] == 1
    assert calls["torch.distributed.all_reduce"] == 2  # dist.all_reduce and the renamed import
    assert calls["Tensor.view"] == 2
    assert calls["Tensor.copy_"] == 1
    assert calls["Tensor.size"] == 1
    assert calls["Tensor.__iadd__"] == 1
    assert calls["Tensor.__setitem__"] == 1
    assert calls["Tensor.__add__"] == 1
    assert calls["Tensor.__truediv__"] == 1
    assert "Tensor.split" not in calls  # a string literal's split
    assert "torch.eye" not in calls  # legacy/ is skipped
    assert ops["torch.nn.Linear"]["kind"] == "class"
    assert ops["torch.distributed.all_reduce"]["kind"] == "function"


def test_marks_the_paths(inventory: dict[str, Any]) -> None:
    ops = inventory["ops"]
    assert ops["torch.matmul"]["gpt_path"]
    assert ops["Tensor.__iadd__"]["gpt_path"]
    assert not ops["torch.zeros"]["gpt_path"]
    assert "torch.cat" not in ops  # traced but never called in the sources: not inventoried
    assert ops["torch.zeros"]["llm_path"]
    assert ops["torch.matmul"]["llm_path"]  # pkg.loader and pkg.model
    assert not ops["torch.ones"]["llm_path"]  # pkg.unused is not imported by the entry
