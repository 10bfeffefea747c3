"""Run conformance cases in this interpreter and pickle their outcomes: ``runner.py SIDE OUT [CASE_ID ...]``.

SIDE ``ours``: MindSpore mode (``MINDSPEED_AI_FRAMEWORK=mindspore``), ``mindspeed_ms.adaptor`` imported before
torch, so MSAdapter's torch with every built-in patch applied. SIDE ``reference``: real PyTorch.

After a case that raised, a canary checks that autograd still works (one failing op can switch it off for the
rest of an MSAdapter process). If it does not, the case is marked ``poisons_autograd`` and the run stops there;
:func:`conformance.driver.run_side` starts a fresh interpreter for the remaining cases.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: `conformance` is importable

from conformance.harness import DTYPES, load_cases  # noqa: E402


def _import_torch(side: str) -> Any:
    if side == "ours":
        os.environ["MINDSPEED_AI_FRAMEWORK"] = "mindspore"
        import mindspeed_ms.adaptor  # noqa: F401  (first: applies the built-in patches)
    import torch

    return torch


def _dtype_name(torch: Any, dtype: Any) -> str:
    for name in DTYPES:
        candidate = getattr(torch, name, None)
        if candidate is not None and dtype == candidate:
            return name
    return f"unknown:{dtype}"


def encode(torch: Any, value: Any) -> Any:
    """Turn a case's result into plain Python + NumPy (the same shape of data on both sides)."""
    import numpy as np

    if isinstance(value, torch.Tensor):
        dtype = _dtype_name(torch, value.dtype)
        tensor = value.detach()
        if dtype == "bfloat16":
            tensor = tensor.float()
        return {"__tensor__": True, "dtype": dtype, "shape": tuple(int(n) for n in value.shape),
                "values": np.array(tensor.cpu().numpy(), copy=True)}
    if isinstance(value, torch.dtype):
        return {"__dtype__": _dtype_name(torch, value)}
    if isinstance(value, dict):
        return {key: encode(torch, item) for key, item in value.items()}
    if isinstance(value, torch.Size):  # before tuple: a torch.Size must not reach the other interpreter's pickle
        return tuple(int(n) for n in value)
    if isinstance(value, (list, tuple)):
        return (list if isinstance(value, list) else tuple)(encode(torch, item) for item in value)
    if value is None or type(value) in (bool, int, float, str, complex):
        return value
    for plain in (bool, int, float, str, complex):  # subclasses (numpy.float64, a version string): the plain type
        if isinstance(value, plain):
            return plain(value)
    return {"__repr__": f"{type(value).__name__}: {value!r}"[:200]}


def _error(error: BaseException) -> dict[str, Any]:
    builtins = [klass.__name__ for klass in type(error).__mro__ if klass.__module__ == "builtins"]
    return {"__error__": True, "type": type(error).__name__, "module": type(error).__module__,
            "builtins": builtins, "message": str(error)[:500],
            "ours_typed": type(error).__module__.startswith("mindspeed_ms"),
            "where": traceback.format_exception(error)[-2][:300] if error.__traceback__ else ""}


def _autograd_works(torch: Any) -> bool:
    try:
        x = torch.ones(2, requires_grad=True)
        (x * 3.0).sum().backward()
        return x.grad is not None and [float(v) for v in x.grad.tolist()] == [3.0, 3.0]
    except Exception:  # noqa: BLE001  (any failure means the process is poisoned)
        return False


def run(side: str, out: Path, wanted: list[str]) -> None:
    """Run ``wanted`` cases (all when empty) and pickle ``{"results": {id: outcome}, "stopped_after": id}``."""
    torch = _import_torch(side)
    cases = load_cases()
    ids = wanted or list(cases)
    results: dict[str, Any] = {}
    stopped_after = None
    for case_id in ids:
        torch.manual_seed(0)
        try:
            outcome = {"ok": True, "value": encode(torch, cases[case_id].function(torch))}
        except Exception as error:  # noqa: BLE001  (an error is an outcome to compare)
            outcome = {"ok": False, "error": _error(error)}
            if not _autograd_works(torch):
                outcome["poisons_autograd"] = True
                results[case_id] = outcome
                stopped_after = case_id
                break
        results[case_id] = outcome
    with out.open("wb") as handle:
        pickle.dump({"side": side, "results": results, "stopped_after": stopped_after}, handle)


if __name__ == "__main__":
    run(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])
