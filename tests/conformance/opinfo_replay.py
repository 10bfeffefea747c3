"""Replay serialised OpInfo samples (:mod:`conformance.opinfo_samples`) on one side and stream the outcomes.

``python opinfo_replay.py SIDE RECORDS OUT START``: SIDE ``ours`` (MindSpore + MSAdapter + mindspeed_ms's patches,
as :mod:`conformance.runner`) or ``reference`` (real PyTorch). Each record's sample is rebuilt (every tensor as a
view of its flat storage with the recorded strides and offset), its variant called (``torch.X(input, *args)``,
``input.X(*args)``, ``input.X_(*args)``, ``operator.X(input, *args)``), and one outcome pickled per record to OUT
(appended, so a crash loses nothing before it): the result, every input tensor after the call (what it mutated),
which inputs the result shares memory with, ``result is input`` for in-place variants, the error, and for
``grad`` records the input gradients of ``sum(out * w)`` with a seeded ``w``. Before each record its id is
written to ``OUT.current``: the sweep marks the record a crash if the interpreter dies there.
"""

from __future__ import annotations

import faulthandler
import operator
import pickle
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: `conformance` is importable

from conformance.harness import data  # noqa: E402
from conformance.runner import _autograd_works, _error, _import_torch, encode  # noqa: E402

#: seconds one record may run before the interpreter is stopped (the sweep records a crash and goes on)
RECORD_TIMEOUT = 60


def decode_arg(torch: Any, value: Any, leaves: list[Any], grad: bool) -> Any:
    """Rebuild a sample argument; tensors that should take a gradient become leaves (appended to ``leaves``)."""
    if isinstance(value, dict) and "__tensor__" in value:
        dtype = getattr(torch, value["__tensor__"])
        base = torch.tensor(value["flat"]).to(dtype)
        shape, stride = tuple(value["shape"]), tuple(value["stride"])
        contiguous = _contiguous_strides(shape)
        numel = 1
        for n in shape:
            numel *= n
        if value["offset"] == 0 and base.numel() == numel and (stride == contiguous or numel <= 1):
            tensor = base.reshape(shape)
        else:
            tensor = torch.as_strided(base, shape, stride, value["offset"])
        if grad and value["requires_grad"] and tensor.dtype.is_floating_point:
            tensor = tensor.detach().requires_grad_(True)
            leaves.append(tensor)
        return tensor
    if isinstance(value, dict) and "__dtype__" in value:
        return getattr(torch, value["__dtype__"])
    if isinstance(value, dict) and "__memory_format__" in value:
        return getattr(torch, value["__memory_format__"])
    if isinstance(value, dict) and "__device__" in value:
        return torch.device(value["__device__"])
    if isinstance(value, dict):
        return {key: decode_arg(torch, item, leaves, grad) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(decode_arg(torch, item, leaves, grad) for item in value)
    return value


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _tensors(torch: Any, value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(torch, item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(torch, item)]
    return []


def _shares_memory(a: Any, b: Any) -> bool | str:
    try:
        if a.numel() == 0 or b.numel() == 0:
            return False
        return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())
    except Exception as error:  # noqa: BLE001  (reported as what it is)
        return f"unknown: {type(error).__name__}"


def _call(torch: Any, record: dict[str, Any], sample: list[Any]) -> Any:
    first, args, kwargs = sample
    variant, name = record["variant"], record["call"]
    if variant == "function":
        target: Any = torch
        for part in name.split(".")[1:]:
            target = getattr(target, part)
        return target(first, *args, **kwargs)
    if variant in ("method", "inplace"):
        return getattr(first, name)(*args, **kwargs)
    return getattr(operator, name)(first, *args, **kwargs)


def replay_one(torch: Any, record: dict[str, Any]) -> dict[str, Any]:
    torch.manual_seed(0)
    leaves: list[Any] = []
    sample = decode_arg(torch, record["sample"], leaves, record["grad"])
    inputs = _tensors(torch, sample)
    try:
        result = _call(torch, record, sample)
    except Exception as error:  # noqa: BLE001  (an error is an outcome to compare)
        outcome: dict[str, Any] = {"ok": False, "error": _error(error)}
        if not _autograd_works(torch):
            outcome["poisons_autograd"] = True
        return outcome
    value: dict[str, Any] = {"result": encode(torch, result)}
    outputs = _tensors(torch, result)
    if record["variant"].startswith("inplace"):
        value["returns_input"] = result is sample[0]
    else:
        value["aliases"] = [[_shares_memory(out, inp) for inp in inputs] for out in outputs]
    value["inputs_after"] = [encode(torch, inp) for inp in inputs]
    if leaves:
        value["grads"] = encode(torch, _grads(torch, outputs, leaves))
    return {"ok": True, "value": value}


def _grads(torch: Any, outputs: list[Any], leaves: list[Any]) -> Any:
    total = None
    for index, out in enumerate(outputs):
        if out.requires_grad and out.dtype.is_floating_point:
            weight = torch.tensor(data(tuple(out.shape), "float32", seed=99 + index)).to(out.dtype)
            term = (out * weight).sum()
            total = term if total is None else total + term
    if total is None:
        return "no differentiable output"
    try:
        total.backward()
    except Exception as error:  # noqa: BLE001
        return {"backward_error": type(error).__name__}
    grads = [leaf.grad for leaf in leaves]
    for leaf in leaves:
        leaf.grad = None
    return grads


def main() -> None:
    side, records_path, out, start = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    torch = _import_torch(side)
    with records_path.open("rb") as handle:
        records = pickle.load(handle)["records"]
    current = Path(f"{out}.current")
    with out.open("ab") as sink:
        for position in range(start, len(records)):
            record = records[position]
            current.write_text(str(position))
            faulthandler.dump_traceback_later(RECORD_TIMEOUT, exit=True)
            try:
                outcome = replay_one(torch, record)
            except Exception as error:  # noqa: BLE001  (rebuilding the sample failed: an outcome too)
                outcome = {"ok": False, "error": _error(error), "rebuild_failed": True}
            faulthandler.cancel_dump_traceback_later()
            pickle.dump((record["id"], outcome), sink)
            sink.flush()
            if outcome.get("poisons_autograd"):
                sys.exit(3)  # the sweep starts a fresh interpreter after this record


if __name__ == "__main__":
    main()
