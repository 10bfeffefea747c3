"""scripts/conformance_report.py: an op's status from its cases' verdicts and the built-in patches, totals and
coverage, the markdown table; on synthetic outcomes (the real runs are tests/test_conformance.py's)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from conformance.harness import load_cases

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "conformance_report.py"


def _report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_report", SCRIPT)
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ok(value: Any) -> dict[str, Any]:
    return {"ok": True, "value": value}


def _outcomes(overrides: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    same = _ok({"__tensor__": True, "dtype": "float32", "shape": (1,), "values": np.zeros(1, np.float32)})
    ours = {case_id: same for case_id in load_cases()}
    reference = dict(ours)
    for case_id, (mine, theirs) in overrides.items():
        ours[case_id], reference[case_id] = mine, theirs
    return {"ours": ours, "reference": reference}


def _error(module: str) -> dict[str, Any]:
    return {"ok": False, "error": {"type": "SomeError", "module": module, "builtins": ["RuntimeError"],
                                   "message": "refused", "ours_typed": module.startswith("mindspeed_ms"),
                                   "where": ""}}


def test_patch_targets_map_to_the_ops_they_implement() -> None:
    op_of = _report().op_of_target
    assert op_of("mindspore.common.tensor.Tensor.add_") == "Tensor.add_"
    assert op_of("msadapter.distributed.distributed_c10d.all_gather") == "torch.distributed.all_gather"
    assert op_of("msadapter.ops.creation.empty_like") == "torch.empty_like"
    assert op_of("msadapter.nn.functional.softmax") == "torch.nn.functional.softmax"
    assert op_of("msadapter.optim.adam.Adam.step") is None
    assert op_of("megatron.core.transformer.utils.attention_mask_func") is None


def test_status_is_the_worst_verdict_and_patches_are_named() -> None:
    report = _report()
    cases = load_cases()
    matmul = [case_id for case_id, case in cases.items() if "torch.matmul" in case.ops][0]
    bmm = [case_id for case_id, case in cases.items() if case.ops == ("torch.bmm",)][0]
    results = _outcomes({matmul: (_ok(1.0), _ok(2.0)), bmm: (_error("mindspeed_ms.compat.x"), _ok(1.0))})
    patches = [{"target": "mindspore.common.tensor.Tensor.add_", "provider": "msadapter_cpu"}]
    table = report.build_table(results, patches)
    rows = {row["op"]: row for row in table["rows"]}
    assert rows["torch.matmul"]["status"] == "divergent"
    assert matmul in rows["torch.matmul"]["detail"]
    assert rows["torch.bmm"]["status"] == "loud"
    assert "refused" in rows["torch.bmm"]["detail"]
    assert rows["Tensor.add_"]["status"] == "fixed by patch"
    assert "Tensor.add_" in rows["Tensor.add_"]["detail"]
    assert rows["torch.cuda.current_device"]["status"] == "not exercised"
    assert table["divergent_cases"] == [matmul]
    assert sum(t["ops"] for t in table["totals"].values()) == len(rows)
    assert table["coverage"].share > 0.9
    markdown = report.render_markdown(table)
    assert "| `torch.matmul` |" in markdown
    assert "## Totals" in markdown
