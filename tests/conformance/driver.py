"""Run every case on both sides (one interpreter per side, more only after a case poisons autograd) and
compare the outcomes case by case."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

RUNNER = Path(__file__).resolve().parent / "runner.py"

#: per-dtype (rtol, atol) for float tensors; integers and bools compare exactly
TOLERANCES = {"float64": (1e-7, 1e-9), "float32": (1e-5, 1e-6), "float16": (2e-3, 1e-3),
              "bfloat16": (1.6e-2, 1e-2), "complex64": (1e-5, 1e-6)}


def run_side(python: str, side: str, case_ids: list[str], timeout: float = 900) -> dict[str, Any]:
    """Run ``case_ids`` with ``python`` on ``side``; return ``{id: outcome}`` for all of them."""
    env = dict(os.environ, GLOG_v="3")
    results: dict[str, Any] = {}
    remaining = list(case_ids)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{side}.pkl"
        while remaining:
            done = subprocess.run([python, str(RUNNER), side, str(out), *remaining], capture_output=True,
                                  text=True, timeout=timeout, env=env)
            if done.returncode != 0:
                raise RuntimeError(f"the {side} conformance runner failed ({done.returncode}):\n{done.stderr[-4000:]}")
            with out.open("rb") as handle:
                chunk = pickle.load(handle)
            results.update(chunk["results"])
            if chunk["stopped_after"] is None:
                break
            remaining = remaining[remaining.index(chunk["stopped_after"]) + 1:]
    return results


#: builtin classes every exception has: sharing only these is not sharing a class a caller would catch
_GENERIC = frozenset({"Exception", "BaseException", "object"})


@dataclass(frozen=True)
class Verdict:
    """How our outcome of one case compares with PyTorch's."""

    kind: str  # "conformant" | "loud" | "divergent"
    detail: str = ""


def compare(ours: dict[str, Any], reference: dict[str, Any], rtol: float | None = None,
            atol: float | None = None, exact: bool = False) -> Verdict:
    """Compare one case's outcomes.

    conformant: both ran and agree, or both raised with a builtin class in common (``except IndexError`` written
    for PyTorch catches ours). loud: PyTorch ran, we raised one of our typed errors (a known
    limitation that says so). divergent: anything else (a different result, an error PyTorch does not raise or a
    foreign one, an accepted call PyTorch refuses, a refusal under another builtin class, autograd left broken).
    Floats compare within ``rtol``/``atol`` (nan equals nan, never a number); ``exact``: bit for bit, signs of zeros
    and infinities included (nan still equals nan).
    """
    if ours.get("poisons_autograd"):
        return Verdict("divergent", "the failure left autograd switched off for the rest of the process")
    if not reference["ok"]:
        if ours["ok"]:
            return Verdict("divergent", f"PyTorch raises {reference['error']['type']}: "
                                        f"{reference['error']['message'][:160]}; ours returns normally")
        shared = (set(ours["error"]["builtins"]) & set(reference["error"]["builtins"])) - _GENERIC
        if not shared:  # code written for PyTorch (`except RuntimeError`) would miss ours
            return Verdict("divergent", f"both raise, under other classes: PyTorch {reference['error']['type']}, "
                                        f"ours {ours['error']['type']} ({', '.join(ours['error']['builtins'][:3])})")
        return Verdict("conformant", "both raise")
    if not ours["ok"]:
        error = ours["error"]
        kind = "loud" if error["ours_typed"] else "divergent"
        return Verdict(kind, f"ours raises {error['type']}: {error['message'][:200]}")
    problem = _difference(ours["value"], reference["value"], "result", rtol, atol, exact)
    return Verdict("divergent", problem) if problem else Verdict("conformant")


def _difference(ours: Any, ref: Any, where: str, rtol: float | None, atol: float | None,
                exact: bool = False) -> str | None:
    if isinstance(ref, dict) and ref.get("__tensor__"):
        if not (isinstance(ours, dict) and ours.get("__tensor__")):
            return f"{where}: PyTorch gives a tensor, ours {_describe(ours)}"
        if ours["dtype"] != ref["dtype"]:
            return f"{where}: dtype {ours['dtype']}, PyTorch {ref['dtype']}"
        if tuple(ours["shape"]) != tuple(ref["shape"]):
            return f"{where}: shape {tuple(ours['shape'])}, PyTorch {tuple(ref['shape'])}"
        if exact and ref["dtype"] in TOLERANCES:
            return _bits_differ(ours["values"], ref["values"], where)
        return _values_differ(ours["values"], ref["values"], ref["dtype"], where, rtol, atol)
    if isinstance(ref, dict):
        if not isinstance(ours, dict) or set(ours) != set(ref):
            return f"{where}: PyTorch gives {_describe(ref)}, ours {_describe(ours)}"
        for key in ref:
            problem = _difference(ours[key], ref[key], f"{where}[{key!r}]", rtol, atol, exact)
            if problem:
                return problem
        return None
    if isinstance(ref, (list, tuple)):
        if not isinstance(ours, (list, tuple)) or len(ours) != len(ref):
            return f"{where}: PyTorch gives {_describe(ref)}, ours {_describe(ours)}"
        for index, (mine, theirs) in enumerate(zip(ours, ref)):
            problem = _difference(mine, theirs, f"{where}[{index}]", rtol, atol, exact)
            if problem:
                return problem
        return None
    if isinstance(ref, float) and isinstance(ours, float) and type(ours) is type(ref):
        if np.isnan(ref) and np.isnan(ours):
            return None
        if exact:
            same = ours == ref and np.signbit(ours) == np.signbit(ref)
            return None if same else f"{where}: {ours!r} != {ref!r} (bit for bit)"
        return None if np.isclose(ours, ref, rtol=rtol or 1e-6, atol=atol or 1e-9) else f"{where}: {ours} != {ref}"
    if type(ours) is not type(ref) or ours != ref:
        return f"{where}: ours {_describe(ours)}, PyTorch {_describe(ref)}"
    return None


def _values_differ(ours: np.ndarray, ref: np.ndarray, dtype: str, where: str, rtol: float | None,
                   atol: float | None) -> str | None:
    if dtype in TOLERANCES:
        default_rtol, default_atol = TOLERANCES[dtype]
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
        if np.allclose(ours, ref, rtol=rtol, atol=atol, equal_nan=True):
            return None
        gaps = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
        worst = float(np.nanmax(gaps)) if ref.size and not np.isnan(gaps).all() else float("nan")
        return f"{where}: values differ (max abs diff {worst:.3g}; ours {_head(ours)}, PyTorch {_head(ref)})"
    if np.array_equal(ours, ref):
        return None
    return f"{where}: values differ (ours {_head(ours)}, PyTorch {_head(ref)})"


def _bits_differ(ours: np.ndarray, ref: np.ndarray, where: str) -> str | None:
    """Float values bit for bit: nan at the same places, the rest equal with the same sign (-0.0 is not +0.0)."""
    ours_nan, ref_nan = np.isnan(ours), np.isnan(ref)
    if not np.array_equal(ours_nan, ref_nan):
        return f"{where}: nan at other places (ours {_head(ours)}, PyTorch {_head(ref)})"
    keep = ~ref_nan
    if np.array_equal(ours[keep], ref[keep]) and np.array_equal(np.signbit(ours[keep]), np.signbit(ref[keep])):
        return None
    wrong = np.flatnonzero(keep & ((ours != ref) | (np.signbit(ours) != np.signbit(ref))))
    first = int(wrong[0])
    return (f"{where}: values differ bit for bit at {wrong.size} place(s), first flat index {first}: "
            f"ours {ours.ravel()[first]!r}, PyTorch {ref.ravel()[first]!r} (ours {_head(ours)}, PyTorch {_head(ref)})")


def _head(values: np.ndarray) -> str:
    return np.array2string(values.ravel()[:6], precision=5)


def _describe(value: Any) -> str:
    if isinstance(value, dict) and value.get("__tensor__"):
        return f"tensor {value['dtype']}{list(value['shape'])}"
    return repr(value)[:120]


def main() -> None:
    """``python driver.py OURS_PYTHON REFERENCE_PYTHON``: print one verdict line per case."""
    sys.path.insert(0, str(RUNNER.parents[1]))
    from conformance.harness import load_cases

    cases = load_cases()
    ours = run_side(sys.argv[1], "ours", list(cases))
    reference = run_side(sys.argv[2], "reference", list(cases))
    for case_id, case in cases.items():
        verdict = compare(ours[case_id], reference[case_id], case.rtol, case.atol, case.exact)
        print(f"{verdict.kind:10} {case_id}  {verdict.detail}")


if __name__ == "__main__":
    main()
