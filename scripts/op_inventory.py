"""Inventory the torch API a field's sources call, with call counts per source (issue 19, item 1).

Run with the reference interpreter (real PyTorch: the list of ``torch.Tensor`` methods and the existence of each
``torch.*`` name are read from it)::

    .venv-ref/bin/python scripts/op_inventory.py \\
        megatron-core=/work/field/Megatron-LM/megatron/core,/work/field/Megatron-LM/megatron/training \\
        mindspeed=/work/field/MindSpeed/mindspeed mindspeed-llm=/work/field/MindSpeed-LLM/mindspeed_llm \\
        --gpt-trace gpt_trace.json --llm-entry /work/field/MindSpeed-LLM/pretrain_gpt.py \\
        --out tests/conformance/inventory.json

What is counted (from the ``ast`` of every ``.py`` file; directories named ``legacy`` and ``tests`` are skipped):

* ``torch.*`` calls however the name was imported (``import torch.nn.functional as F``, ``from torch import
  distributed as dist``, ``from torch.distributed import all_reduce``), canonicalised through the real module
  (``torch.nn.functional.*``, ``torch.distributed.*``); names the reference ``torch`` lacks are dropped. Classes
  (``torch.nn.Linear``, ``torch.Size``...) are listed with ``kind: "class"`` and are not ops.
* ``Tensor`` methods: attribute calls ``x.name(...)`` whose name is a callable attribute of the real
  ``torch.Tensor`` and whose receiver is not a module, a string/number literal or a ``torch`` namespace. Types are
  not known statically, so this is an upper bound (``"a,b".split`` is excluded, ``args.foo.split`` is not).
* Operators, by the dunder PyTorch dispatches to: binary (``a / b`` -> ``Tensor.__truediv__``), augmented
  assignment (``a += b`` -> ``Tensor.__iadd__``), comparisons, unary, indexing (``Tensor.__getitem__`` /
  ``Tensor.__setitem__``). Operands that are literals of strings or that are both number literals are skipped;
  the rest is an upper bound too (integer arithmetic on Python ints is counted).

Paths: ``--gpt-trace`` (a JSON list of op names recorded by ``scripts/trace_gpt_ops.py`` running megatron-core's
GPT example on real PyTorch) marks ``gpt_path``; ``--llm-entry`` marks ``llm_path`` statically: the ops called in
the modules of the sources that MindSpeed-LLM's pretrain entry imports, transitively.
"""

from __future__ import annotations

import argparse
import ast
import collections
import inspect
import json
import sys
from pathlib import Path
from typing import Any

BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
          ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and", ast.BitOr: "or",
          ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift"}
COMPARE = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
UNARY = {ast.USub: "neg", ast.Invert: "invert", ast.UAdd: "pos"}
SKIP_DIRS = {"legacy", "tests", "__pycache__"}


def _torch() -> Any:
    import torch

    return torch


class Resolver:
    """Resolves dotted names against the real ``torch`` and lists its Tensor methods."""

    def __init__(self) -> None:
        self.torch = _torch()
        self.tensor_methods = {name for name in dir(self.torch.Tensor)
                               if not name.startswith("_") and callable(getattr(self.torch.Tensor, name, None))}
        self._cache: dict[str, tuple[str, str] | None] = {}

    def resolve(self, dotted: str) -> tuple[str, str] | None:
        """``("torch.nn.functional.softmax", "function")`` for a dotted name rooted at ``torch``, or None."""
        if dotted not in self._cache:
            self._cache[dotted] = self._resolve(dotted)
        return self._cache[dotted]

    def _resolve(self, dotted: str) -> tuple[str, str] | None:
        import importlib

        parts = dotted.split(".")
        obj: Any = self.torch
        for index, part in enumerate(parts[1:], start=1):
            if hasattr(obj, part):
                obj = getattr(obj, part)
                continue
            try:
                obj = importlib.import_module(".".join(parts[: index + 1]))
            except Exception:  # noqa: BLE001  (not a torch name: dropped)
                return None
        if inspect.ismodule(obj) or not callable(obj):
            return None
        if parts[:2] == ["torch", "Tensor"] and len(parts) == 3:
            return f"Tensor.{parts[2]}", "method"
        canonical = ".".join(parts)
        for namespace in ("torch.nn.functional", "torch.distributed"):
            module = importlib.import_module(namespace)
            if len(parts) >= 2 and getattr(module, parts[-1], None) is obj and not canonical.startswith(namespace):
                canonical = f"{namespace}.{parts[-1]}"
        return canonical, "class" if inspect.isclass(obj) else "function"


class Counter(ast.NodeVisitor):
    """Counts torch calls, Tensor method calls and operators in one module."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.aliases: dict[str, str] = {}  # local name -> dotted torch name
        self.modules: set[str] = set()  # local names bound to non-torch modules
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()

    # imports ---------------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "torch" or alias.name.startswith("torch."):
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    self.aliases["torch"] = "torch"
            else:
                self.modules.add(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0 and (module == "torch" or module.startswith("torch.")):
            for alias in node.names:
                if alias.name != "*":
                    self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"

    # calls -----------------------------------------------------------------------------------------------
    def _dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            head = self._dotted(node.value)
            return f"{head}.{node.attr}" if head else None
        return None

    def _root_is_module(self, node: ast.expr) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.modules

    def visit_Call(self, node: ast.Call) -> None:
        dotted = self._dotted(node.func)
        if dotted:
            resolved = self.resolver.resolve(dotted)
            if resolved:
                self.counts[resolved] += 1
        elif isinstance(node.func, ast.Attribute) and node.func.attr in self.resolver.tensor_methods:
            receiver = node.func.value
            literal = isinstance(receiver, (ast.Constant, ast.JoinedStr, ast.List, ast.Dict, ast.Tuple, ast.Set))
            if not literal and not self._root_is_module(receiver) and self._dotted(receiver) is None:
                self.counts[(f"Tensor.{node.func.attr}", "method")] += 1
        self.generic_visit(node)

    # operators -------------------------------------------------------------------------------------------
    @staticmethod
    def _plain(node: ast.expr) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))

    @staticmethod
    def _number(node: ast.expr) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant))

    def _operator(self, name: str) -> None:
        self.counts[(f"Tensor.__{name}__", "operator")] += 1

    def visit_BinOp(self, node: ast.BinOp) -> None:
        operands = (node.left, node.right)
        if (type(node.op) in BINARY and not any(self._plain(o) or isinstance(o, ast.JoinedStr) for o in operands)
                and not all(self._number(o) for o in operands)):
            self._operator(BINARY[type(node.op)])
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if type(node.op) in BINARY and not self._plain(node.value) and not isinstance(node.value, ast.JoinedStr):
            self._operator("i" + BINARY[type(node.op)])
            if isinstance(node.target, ast.Subscript):
                self._operator("getitem")
                self._operator("setitem")
        self.visit(node.value)
        if isinstance(node.target, ast.Subscript):
            self.visit(node.target.value)
            self.visit(node.target.slice)

    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:]):
            if type(op) in COMPARE and not (self._plain(left) or self._plain(right)) and not (
                    isinstance(left, ast.Constant) and left.value is None or isinstance(right, ast.Constant)
                    and right.value is None) and not (self._number(left) and self._number(right)):
                self._operator(COMPARE[type(op)])
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if type(node.op) in UNARY and not isinstance(node.operand, ast.Constant):
            self._operator(UNARY[type(node.op)])
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load) and not self._annotation_like(node):
            self._operator("getitem")
        elif isinstance(node.ctx, ast.Store):
            self._operator("setitem")
        self.generic_visit(node)

    def _annotation_like(self, node: ast.Subscript) -> bool:
        # typing subscripts (Optional[int], List[Tensor], torch.Tensor[...]) are not indexing
        value = node.value
        name = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else ""
        return name[:1].isupper() or name in {"list", "dict", "tuple", "set", "type"}

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # annotations are not calls: visit the body, decorators and defaults only
        for child in [*node.decorator_list, *node.args.defaults, *[d for d in node.args.kw_defaults if d],
                      *node.body]:
            self.visit(child)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)


def python_files(roots: list[Path]) -> list[Path]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if not SKIP_DIRS & set(path.relative_to(root).parts[:-1]):
                found.append(path)
    return found


def count_file(resolver: Resolver, path: Path) -> collections.Counter[tuple[str, str]]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except SyntaxError:
        return collections.Counter()
    counter = Counter(resolver)
    counter.visit(tree)
    return counter.counts


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, name: str) -> set[str]:
    """Absolute module names that ``path`` (module ``name``) imports, candidates included (``a.b`` for
    ``from a import b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    for module in list(found):  # importing a.b.c runs a and a.b
        parts = module.split(".")
        found.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return found


def import_closure(entry: Path, modules: dict[str, Path]) -> set[str]:
    """The modules among ``modules`` that ``entry`` imports, transitively."""
    seen: set[str] = set()
    todo = [m for m in imports_of(entry, "__main__") if m in modules]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(m for m in imports_of(modules[name], name) if m in modules and m not in seen)
    return seen


def build(sources: dict[str, list[Path]], gpt_trace: set[str] | None, llm_entry: Path | None) -> dict[str, Any]:
    resolver = Resolver()
    per_source: dict[str, collections.Counter[tuple[str, str]]] = {}
    per_module: dict[str, collections.Counter[tuple[str, str]]] = {}
    module_paths: dict[str, Path] = {}
    files = 0
    for source, roots in sources.items():
        total: collections.Counter[tuple[str, str]] = collections.Counter()
        for root in roots:
            for path in python_files([root]):
                files += 1
                counts = count_file(resolver, path)
                total.update(counts)
                name = module_name(path, root)
                module_paths[name] = path
                per_module[name] = counts
        per_source[source] = total
    llm_ops: set[str] | None = None
    llm_modules: list[str] = []
    if llm_entry is not None:
        llm_modules = sorted(import_closure(llm_entry, module_paths))
        llm_ops = {op for module in llm_modules for (op, _kind) in per_module[module]}
        llm_ops |= {op for (op, _kind) in count_file(resolver, llm_entry)}
    ops: dict[str, dict[str, Any]] = {}
    for source, counts in per_source.items():
        for (op, kind), n in counts.items():
            entry = ops.setdefault(op, {"kind": kind, "calls": {name: 0 for name in sources}, "total": 0})
            entry["calls"][source] += n
            entry["total"] += n
    for op, entry in ops.items():
        entry["gpt_path"] = None if gpt_trace is None else op in gpt_trace
        entry["llm_path"] = None if llm_ops is None else op in llm_ops
    ordered = dict(sorted(ops.items(), key=lambda item: (-item[1]["total"], item[0])))
    return {
        "generated_by": "scripts/op_inventory.py",
        "torch_version": resolver.torch.__version__,
        "sources": {name: [str(root) for root in roots] for name, roots in sources.items()},
        "files": files,
        "gpt_path": "traced: ops recorded while megatron-core's GPT example trains on real PyTorch "
                    "(scripts/trace_gpt_ops.py), intersected with the static inventory" if gpt_trace is not None
                    else None,
        "llm_path": f"static: ops called in the {len(llm_modules)} modules of the sources that "
                    f"MindSpeed-LLM's {llm_entry.name} imports, transitively" if llm_entry else None,
        "ops": ordered,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", help="NAME=PATH[,PATH...]")
    parser.add_argument("--gpt-trace", type=Path, action="append",
                        help="JSON list of ops traced on the GPT example (repeatable: the union is taken)")
    parser.add_argument("--llm-entry", type=Path, help="MindSpeed-LLM's pretrain entry script")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sources = {}
    for spec in args.sources:
        name, _, paths = spec.partition("=")
        sources[name] = [Path(p) for p in paths.split(",")]
    trace = {op for path in args.gpt_trace for op in json.loads(path.read_text())} if args.gpt_trace else None
    inventory = build(sources, trace, args.llm_entry)
    args.out.write_text(json.dumps(inventory, indent=1) + "\n")
    ops = inventory["ops"]
    calls = sum(entry["total"] for entry in ops.values() if entry["kind"] != "class")
    sys.stdout.write(f"{len(ops)} names ({sum(e['kind'] != 'class' for e in ops.values())} ops), "
                     f"{calls} op calls, {inventory['files']} files -> {args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
