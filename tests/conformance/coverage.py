"""The inventory (tests/conformance/inventory.json, made by scripts/make_inventory.sh) against the cases: which
inventoried ops the suite exercises, weighted by how often the field calls them, which ops lie on megatron-core's
GPT path and on MindSpeed-LLM's pretrain path, and the status of each op from its cases' verdicts.

Needs no torch (pytest imports it to assert coverage; scripts/conformance_report.py to print the table)."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INVENTORY = Path(__file__).resolve().parent / "inventory.json"
#: the collectives' differential run (2 msrun workers against 2 torchrun workers, tests/test_collectives_conformance.py)
COLLECTIVES_WORKER = Path(__file__).resolve().parents[1] / "compat_workers" / "collectives_conformance.py"

#: verdicts from worst to best: an op takes the worst verdict of its cases
SEVERITY = ("divergent", "loud", "conformant")


def load_inventory(path: Path = INVENTORY) -> dict[str, Any]:
    return json.loads(path.read_text())


def inventoried_ops(inventory: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every op of the inventory (classes are listed there but are not ops)."""
    return {name: entry for name, entry in inventory["ops"].items() if entry["kind"] != "class"}


def case_ops(cases: Iterable[Any]) -> dict[str, list[str]]:
    """op -> ids of the cases that name it."""
    found: dict[str, list[str]] = {}
    for case in cases:
        for op in case.ops:
            found.setdefault(op, []).append(case.id)
    return found


def collective_ops(inventory: dict[str, Any], worker: Path = COLLECTIVES_WORKER) -> set[str]:
    """The inventoried ``torch.distributed`` ops the collectives' 2-worker differential run calls: ``dist.X``
    references in its worker, and names of inventoried ``torch.distributed`` ops it holds as strings (it looks some
    up with ``getattr``). Empty when the worker is not there."""
    if not worker.exists():
        return set()
    names = {op.rpartition(".")[2]: op for op in inventory["ops"] if op.startswith("torch.distributed.")
             and op.count(".") == 2}
    found = set()
    for node in ast.walk(ast.parse(worker.read_text())):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "dist":
            name = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        else:
            continue
        if name in names:
            found.add(names[name])
    return found


@dataclass
class Coverage:
    """Share of the field's calls (to inventoried ops) that go to an op with at least one case."""

    covered_calls: int
    total_calls: int
    covered_ops: int
    total_ops: int
    uncovered: list[tuple[str, int]] = field(default_factory=list)  # (op, calls), most called first

    @property
    def share(self) -> float:
        return self.covered_calls / self.total_calls if self.total_calls else 1.0


def coverage(inventory: dict[str, Any], cases: Iterable[Any], kinds: tuple[str, ...] | None = None,
             also: Iterable[str] = ()) -> Coverage:
    """Coverage by call count, over all op kinds or only ``kinds`` (``function``, ``method``, ``operator``);
    ``also``: ops exercised by another differential run (the collectives')."""
    exercised = set(case_ops(cases)) | set(also)
    ops = {name: entry for name, entry in inventoried_ops(inventory).items() if kinds is None or entry["kind"] in kinds}
    covered = {name for name in ops if name in exercised}
    uncovered = sorted(((name, entry["total"]) for name, entry in ops.items() if name not in covered),
                       key=lambda item: (-item[1], item[0]))
    return Coverage(sum(ops[name]["total"] for name in covered), sum(entry["total"] for entry in ops.values()),
                    len(covered), len(ops), uncovered)


def on_path(entry: dict[str, Any]) -> list[str]:
    """The paths an inventory entry lies on: ``gpt`` (traced on megatron-core's GPT example), ``llm``
    (MindSpeed-LLM's pretrain imports)."""
    return [name for name, key in (("gpt", "gpt_path"), ("llm", "llm_path")) if entry.get(key)]


def op_status(verdicts: list[str]) -> str | None:
    """The worst of an op's case verdicts (None: no case)."""
    for kind in SEVERITY:
        if kind in verdicts:
            return kind
    return None
