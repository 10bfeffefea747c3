"""Materialise PyTorch's own OpInfo samples for the ops the field calls (reference side only).

``python opinfo_samples.py OUT LIMIT [OPINFO_NAME ...]`` under real PyTorch (``.venv-ref``, with ``expecttest``):
for every OpInfo of ``torch.testing._internal.common_methods_invocations.op_db`` whose function / method /
in-place / operator variant the field calls (``inventory.json``), for float32, float16, bfloat16, int64 and bool
as the OpInfo supports them, the samples of ``sample_inputs`` (a fixed seed) and, once per OpInfo, its
``error_inputs`` are serialised with NumPy only: every tensor as the flat storage it views plus shape, strides
and storage offset (so a non-contiguous input is rebuilt with the same layout on the other side), and args /
kwargs with nested lists, scalars and dtypes. A sample holding anything else (a callable, a generator) is
skipped and counted. :mod:`conformance.opinfo_replay` runs the records on either side.
"""

from __future__ import annotations

import json
import pickle
import sys
import warnings
from pathlib import Path
from typing import Any

INVENTORY = Path(__file__).resolve().parent / "inventory.json"

#: the dtypes swept, by PyTorch name (those the OpInfo supports on CPU)
SWEPT_DTYPES = ("float32", "float16", "bfloat16", "int64", "bool")

#: OpInfos whose results are random or undefined memory: their values cannot be compared
UNDEFINED_VALUES = frozenset({"exponential", "uniform", "empty", "empty_like", "new_empty", "resize_",
                              "bernoulli", "normal", "multinomial", "rand_like", "randn_like", "randint_like"})

class Unserialisable(Exception):
    """A sample argument that cannot cross to the other interpreter (a callable, a generator, ...)."""


def _flat_storage(torch: Any, tensor: Any) -> tuple[Any, tuple[int, ...], tuple[int, ...], int]:
    """The flat buffer ``tensor`` views (positions it does not view hold 0), its shape, strides, offset."""
    shape, stride, offset = tuple(tensor.shape), tuple(tensor.stride()), int(tensor.storage_offset())
    span = offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if tensor.numel() else 0
    base = torch.zeros(span, dtype=tensor.dtype)
    if tensor.numel():
        view = torch.as_strided(base, shape, stride, offset)
        if min(stride, default=1) == 0:  # expanded memory: write the distinct elements only
            index = tuple(slice(0, 1) if s == 0 else slice(None) for s in stride)
            view[index].copy_(tensor.detach()[index])
        else:
            view.copy_(tensor.detach())
    if tensor.dtype == torch.bfloat16:
        base = base.float()
    return base.numpy().copy(), shape, stride, offset


def encode_arg(torch: Any, value: Any) -> Any:
    """A sample argument as plain Python + NumPy (tensors as :func:`_flat_storage` records)."""
    if isinstance(value, torch.Tensor):
        if value.is_sparse or value.layout != torch.strided or value.is_complex() or value.is_quantized:
            raise Unserialisable(f"tensor layout {value.layout} / dtype {value.dtype}")
        name = str(value.dtype).replace("torch.", "")
        flat, shape, stride, offset = _flat_storage(torch, value)
        return {"__tensor__": name, "flat": flat, "shape": shape, "stride": stride, "offset": offset,
                "requires_grad": bool(value.requires_grad)}
    if isinstance(value, torch.dtype):
        return {"__dtype__": str(value).replace("torch.", "")}
    if isinstance(value, torch.memory_format):
        return {"__memory_format__": str(value).replace("torch.", "")}
    if isinstance(value, torch.device):
        return {"__device__": str(value)}
    if isinstance(value, torch.Size):
        return tuple(int(n) for n in value)
    if isinstance(value, (list, tuple)):
        return type(value)(encode_arg(torch, item) for item in value) if type(value) in (list, tuple) else \
            tuple(encode_arg(torch, item) for item in value)
    if isinstance(value, dict):
        return {str(key): encode_arg(torch, item) for key, item in value.items()}
    if value is None or value is Ellipsis or type(value) in (bool, int, float, str, slice):
        return value
    raise Unserialisable(type(value).__name__)


def _qualified(torch: Any, op: Any) -> list[tuple[str, str, str]]:
    """``(variant, inventory name, how to call it)`` for each variant of ``op`` that has a plain name."""
    found: list[tuple[str, str, str]] = []
    target: Any = torch
    for part in op.name.split("."):
        target = getattr(target, part, None)
    if target is not None and target is op.op:
        found.append(("function", f"torch.{op.name}", f"torch.{op.name}"))
    for variant, attribute in (("method", "method_variant"), ("inplace", "inplace_variant")):
        name = getattr(getattr(op, attribute), "__name__", None)
        if name:
            found.append((variant, f"Tensor.{name}", name))
    for variant, attribute in (("operator", "operator_variant"), ("inplace_operator", "inplace_operator_variant")):
        name = getattr(getattr(op, attribute), "__name__", None)
        if name:
            found.append((variant, f"Tensor.__{name}__", name))
    return found


def materialise(out: Path, limit: int, only: list[str]) -> None:
    """Write the records of the OpInfos named ``only`` (all when empty), ``limit`` samples per OpInfo and dtype
    (0: all; the first ones, where OpInfo lists its small and edge-case samples)."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    warnings.simplefilter("ignore")
    calls = {name: entry.get("total", 0) for name, entry in json.loads(INVENTORY.read_text())["ops"].items()}
    records: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    for op in op_db:
        if only and op.name not in only:
            continue
        label = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        variants = [v for v in _qualified(torch, op) if calls.get(v[1])]
        if not variants or op.name in UNDEFINED_VALUES:
            continue
        supported = {str(d).replace("torch.", "") for d in op.supported_dtypes("cpu")}
        for dtype in (d for d in SWEPT_DTYPES if d in supported):
            grad = dtype == "float32" and op.supports_autograd
            torch.manual_seed(0)
            try:
                samples = list(op.sample_inputs("cpu", getattr(torch, dtype), requires_grad=grad))[:limit or None]
            except Exception as error:  # noqa: BLE001  (an OpInfo that cannot build samples here: counted)
                skipped[f"{label}/{dtype}: {type(error).__name__}"] = 1
                continue
            for index, sample in enumerate(samples):
                try:
                    encoded = encode_arg(torch, [sample.input, list(sample.args), dict(sample.kwargs)])
                except Unserialisable as why:
                    skipped[f"{label}: {why}"] = skipped.get(f"{label}: {why}", 0) + 1
                    continue
                for variant, inventory_name, call in variants:
                    records.append({"id": f"{label}/{variant}/{dtype}/{index}", "opinfo": label,
                                    "op": inventory_name, "calls": calls[inventory_name], "variant": variant,
                                    "call": call, "dtype": dtype, "sample": encoded,
                                    "grad": grad and variant == "function"})
        try:
            errors = list(op.error_inputs("cpu"))
        except Exception:  # noqa: BLE001
            errors = []
        function = [v for v in variants if v[0] == "function"] or variants[:1]
        for index, error_input in enumerate(errors[:limit or None]):
            sample = error_input.sample_input
            try:
                encoded = encode_arg(torch, [sample.input, list(sample.args), dict(sample.kwargs)])
            except Unserialisable as why:
                skipped[f"{label}: {why}"] = skipped.get(f"{label}: {why}", 0) + 1
                continue
            variant, inventory_name, call = function[0]
            records.append({"id": f"{label}/{variant}/error/{index}", "opinfo": label, "op": inventory_name,
                            "calls": calls[inventory_name], "variant": variant, "call": call, "dtype": "error",
                            "sample": encoded, "grad": False})
    with out.open("wb") as handle:
        pickle.dump({"records": records, "skipped": skipped}, handle)


if __name__ == "__main__":
    materialise(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
