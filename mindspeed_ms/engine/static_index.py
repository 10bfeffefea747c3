"""The bindings a module's source makes, read with ``ast`` (for :mod:`mindspeed_ms.engine.static`).

:func:`read_module` reads the source a spec locates (``.py`` files, zip imports) into a :class:`SourceModule`.

Every name a module's top level can bind — classes, functions, assignments, imports, ``from``
imports and ``*`` imports — including bindings inside module-level ``if``/``try``/``with``/loop
blocks, recorded without executing anything.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec, SourceFileLoader

from .finders import search_locations

__all__ = ["SourceModule", "Binding", "collect_bindings", "absolute_name", "read_module"]


@dataclass
class SourceModule:
    name: str
    file: str | None
    search_locations: list[str] | None
    scope: dict[str, list[Binding]] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)
    extras: dict[str, dict[str, list[Binding]]] = field(default_factory=dict)
    opaque: str | None = None  # why its source cannot be read
    has_getattr: bool = False


@dataclass(frozen=True)
class Binding:
    kind: str  # class | function | value | module | from
    line: int
    node: ast.AST | None = None
    ref: str = ""  # module name for module / from
    attr: str = ""  # imported name for from


def collect_bindings(body: Sequence[ast.stmt], module: SourceModule, scope: dict[str, list[Binding]]) -> None:
    """Record every name a block of statements can bind, descending into control-flow blocks."""

    def bind(name: str, binding: Binding) -> None:
        scope.setdefault(name, []).append(binding)

    def bind_target(target: ast.expr, stmt: ast.stmt, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            bind(target.id, Binding("value", stmt.lineno, value))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                bind_target(element, stmt, None)
        elif isinstance(target, ast.Starred):
            bind_target(target.value, stmt, None)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            owner = module.extras.setdefault(target.value.id, {})
            owner.setdefault(target.attr, []).append(Binding("value", stmt.lineno, value))

    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            bind(stmt.name, Binding("class", stmt.lineno, stmt))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bind(stmt.name, Binding("function", stmt.lineno, stmt))
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                bind_target(target, stmt, stmt.value)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            # A bare annotation (``x: int``) binds nothing, at module level or in a class body.
            if stmt.value is not None:
                bind_target(stmt.target, stmt, stmt.value if isinstance(stmt, ast.AnnAssign) else None)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    bind(alias.asname, Binding("module", stmt.lineno, ref=alias.name))
                else:
                    top = alias.name.split(".")[0]
                    bind(top, Binding("module", stmt.lineno, ref=top))
        elif isinstance(stmt, ast.ImportFrom):
            source = absolute_name(module, stmt.module, stmt.level)
            for alias in stmt.names:
                if alias.name == "*":
                    module.stars.append(source)
                else:
                    binding = Binding("from", stmt.lineno, ref=source, attr=alias.name)
                    bind(alias.asname or alias.name, binding)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            bind_target(stmt.target, stmt, None)
            collect_bindings(stmt.body + stmt.orelse, module, scope)
        elif isinstance(stmt, (ast.If, ast.While)):
            collect_bindings(stmt.body + stmt.orelse, module, scope)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            collect_bindings(stmt.body, module, scope)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            blocks = list(stmt.body) + list(stmt.orelse) + list(stmt.finalbody)  # type: ignore[attr-defined]  # TryStar: 3.11+
            for handler in stmt.handlers:  # type: ignore[attr-defined]  # TryStar: 3.11+
                blocks.extend(handler.body)
            collect_bindings(blocks, module, scope)
        elif type(stmt).__name__ == "Match":
            for case in stmt.cases:  # type: ignore[attr-defined]  # Match: 3.10+, ast typed for 3.9
                collect_bindings(case.body, module, scope)


def absolute_name(module: SourceModule, name: str | None, level: int) -> str:
    if level == 0:
        return name or ""
    package = module.name if module.search_locations is not None else module.name.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{name}" if name else package


def read_module(name: str, spec: ModuleSpec) -> SourceModule:
    """Read the module ``spec`` locates and collect its bindings; why it cannot be read goes in ``opaque``."""
    locations = search_locations(spec)
    module = SourceModule(name, spec.origin, locations)
    loader = spec.loader
    if spec.origin is None:
        if locations is not None and (loader is None or "Namespace" in type(loader).__name__):
            return module  # a namespace package: no source, only submodules
        # e.g. MSAdapter's `torch`, a proxy made by a meta path finder at run time
        module.opaque = f"it is made at run time by {type(loader).__name__}"
        return module
    source: bytes | None = None
    if isinstance(loader, SourceFileLoader) and spec.origin:
        try:
            with open(spec.origin, "rb") as handle:
                source = handle.read()
        except OSError as exc:
            module.opaque = f"its source {spec.origin!r} cannot be read ({exc})"
    elif type(loader).__name__ == "zipimporter":
        text = loader.get_source(name)  # type: ignore[union-attr]  # a zipimporter, checked above
        source = text.encode() if text is not None else None
    if source is None:
        module.opaque = module.opaque or f"it has no Python source (origin {spec.origin!r})"
        return module
    try:
        tree = ast.parse(source, filename=spec.origin or name)
    except SyntaxError as exc:
        module.opaque = f"its source does not parse ({exc})"
        return module
    collect_bindings(tree.body, module, module.scope)
    module.has_getattr = any(
        binding.kind == "function" for binding in module.scope.get("__getattr__", ())
    )
    return module
