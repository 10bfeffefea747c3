"""The differential conformance suite: each case on our backend (MindSpore CPU + MSAdapter + built-in patches)
and on real PyTorch (the reference interpreter), compared (see tests/conformance)."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from _helpers import reference_python
from conformance.driver import compare, run_side
from conformance.harness import load_cases
from conformance.known import KNOWN_DIVERGENT

CASES = load_cases()


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Any]:
    ids = list(CASES)
    return {"ours": run_side(sys.executable, "ours", ids), "reference": run_side(reference_python(), "reference", ids)}


def _param(case_id: str) -> Any:
    reason = KNOWN_DIVERGENT.get(case_id)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case_id, marks=marks, id=case_id)


def test_known_divergences_name_existing_cases() -> None:
    assert not set(KNOWN_DIVERGENT) - set(CASES)


@pytest.mark.parametrize("case_id", [_param(case_id) for case_id in CASES])
def test_case_computes_what_pytorch_computes(outcomes: dict[str, Any], case_id: str) -> None:
    case = CASES[case_id]
    verdict = compare(outcomes["ours"][case_id], outcomes["reference"][case_id], case.rtol, case.atol)
    assert verdict.kind != "divergent", f"{case_id} ({', '.join(case.ops)}): {verdict.detail}"
