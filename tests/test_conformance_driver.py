"""conformance.driver.compare: what counts as agreeing with PyTorch (tolerances, nan, exact bits, errors)."""

from __future__ import annotations

from typing import Any

import numpy as np
from conformance.driver import compare


def _tensor(values: list[float], dtype: str = "float32") -> dict[str, Any]:
    array = np.array(values, dtype=dtype)
    return {"ok": True, "value": {"__tensor__": True, "dtype": dtype, "shape": array.shape, "values": array}}


def test_nan_equals_nan_but_never_a_number() -> None:
    nan = float("nan")
    assert compare(_tensor([1.0, nan]), _tensor([1.0, nan])).kind == "conformant"
    assert compare(_tensor([1.0, 2.0]), _tensor([1.0, nan])).kind == "divergent"
    assert compare(_tensor([1.0, nan]), _tensor([1.0, 2.0])).kind == "divergent"
    assert compare(_tensor([1.0, nan]), _tensor([1.0, nan]), exact=True).kind == "conformant"
    assert compare(_tensor([nan, 1.0]), _tensor([1.0, nan]), exact=True).kind == "divergent"


def test_signed_zeros_differ_only_when_exact() -> None:
    assert compare(_tensor([-0.0, 1.0]), _tensor([0.0, 1.0])).kind == "conformant"
    verdict = compare(_tensor([-0.0, 1.0]), _tensor([0.0, 1.0]), exact=True)
    assert verdict.kind == "divergent"
    assert "first flat index 0" in verdict.detail


def test_exact_ignores_tolerances_and_checks_infinities() -> None:
    assert compare(_tensor([1.0 + 1e-7]), _tensor([1.0]), rtol=1e-3).kind == "conformant"
    assert compare(_tensor([1.0 + 1e-6]), _tensor([1.0]), rtol=1e-3, exact=True).kind == "divergent"
    inf = float("inf")
    assert compare(_tensor([-inf]), _tensor([inf])).kind == "divergent"
    assert compare(_tensor([inf, -inf], "float16"), _tensor([inf, -inf], "float16"), exact=True).kind == "conformant"


def test_exact_python_floats_keep_the_sign_of_zero() -> None:
    ok = {"ok": True, "value": {"a": -0.0}}
    assert compare(ok, {"ok": True, "value": {"a": 0.0}}).kind == "conformant"
    assert compare(ok, {"ok": True, "value": {"a": 0.0}}, exact=True).kind == "divergent"
    assert compare({"ok": True, "value": float("nan")}, {"ok": True, "value": float("nan")}, exact=True).kind == \
        "conformant"


def test_integers_compare_exactly_and_errors_need_a_shared_builtin() -> None:
    assert compare(_tensor([1, 2], "int64"), _tensor([1, 3], "int64")).kind == "divergent"
    error = {"ok": False, "error": {"type": "IndexError", "builtins": ["IndexError", "LookupError", "Exception"],
                                    "message": "out of range", "ours_typed": False}}
    other = {"ok": False, "error": {"type": "ValueError", "builtins": ["ValueError", "Exception"],
                                    "message": "bad", "ours_typed": False}}
    assert compare(error, error).kind == "conformant"
    assert compare(other, error).kind == "divergent"
