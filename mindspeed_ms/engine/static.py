"""Resolve dotted targets by reading installed sources with ``ast``, without importing anything.

``mindspeed-ms verify --static`` uses this where MindSpore, torch or an NPU are absent. Modules are
found the way the import system would find them (``sys.path`` with ``PYTHONPATH``, ``.pth`` files,
setuptools' editable finders, each package's ``__path__``) through ``importlib.machinery.PathFinder``
and the side-effect-free finders of ``sys.meta_path``, never through ``importlib.util.find_spec``
(which imports parent packages). Then the attribute part of the target is looked up in the module's
AST: classes (nested, with their bases), functions, assignments, ``import x as y`` and names
re-exported through ``from x import y`` (followed to their definition), including bindings made
inside module-level ``if``/``try``/``with``/loop blocks. What cannot be judged by reading source —
extension modules, a module-level ``__getattr__``, attributes of opaque values — is reported as
``unverifiable``, not as missing.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import pkgutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib.machinery import ModuleSpec
from typing import Any

from .finders import find_spec, find_spec_on_path, is_safe_finder
from .static_index import Binding, SourceModule, collect_bindings, read_module

__all__ = ["StaticResult", "StaticResolver", "resolve_static", "OK", "MISSING", "UNVERIFIABLE"]

OK = "ok"
MISSING = "missing"
UNVERIFIABLE = "unverifiable"

# Names that @dataclass may add to a class beyond what ``object`` already has.
_DATACLASS_NAMES = frozenset({"__dataclass_fields__", "__dataclass_params__", "__match_args__"})


#: attributes the import system sets on every module it executes (not bound in the source)
_IMPORT_SYSTEM_ATTRIBUTES = frozenset({"__name__", "__file__", "__spec__", "__loader__", "__package__"})


@dataclass(frozen=True)
class StaticResult:
    """How one target resolved against the installed sources.

    Attributes:
        target: the dotted target.
        state: ``"ok"``, ``"missing"`` or ``"unverifiable"``.
        kind: what the target is when found (``module``, ``class``, ``function``, ``value``, ``object``).
        location: ``file:line`` of the definition when found.
        reason: why it is missing or unverifiable, with close matches quoted with ``repr``.
        resolved: the longest prefix of the target that resolved.
        suggestions: close matches for the first missing part.
    """

    target: str
    state: str
    kind: str | None = None
    location: str | None = None
    reason: str | None = None
    resolved: str = ""
    suggestions: tuple[str, ...] = ()

    @property
    def is_ok(self) -> bool:
        """True when the target was found."""
        return self.state == OK

    def to_dict(self) -> dict[str, Any]:
        """Return JSON-serialisable data."""
        return {**asdict(self), "suggestions": list(self.suggestions)}


@dataclass(frozen=True)
class _Node:
    kind: str  # module | class | function | value | object
    module: SourceModule
    line: int = 0
    node: ast.AST | None = None
    obj: Any = None

    @property
    def location(self) -> str | None:
        if self.kind == "object" or self.module.file is None:
            return None
        return f"{self.module.file}:{self.line}" if self.line else self.module.file


@dataclass
class _Outcome:
    found: list[_Node] = field(default_factory=list)
    names: set[str] = field(default_factory=set)  # what exists where the lookup failed
    unknown: str | None = None

    def merge(self, other: _Outcome) -> None:
        self.found.extend(other.found)
        self.names |= other.names
        self.unknown = self.unknown or other.unknown


class StaticResolver:
    """Resolve many targets against installed sources, reading and parsing each module once.

    Args:
        search_path: top-level folders to search instead of the interpreter's import system
            (``sys.meta_path`` / ``sys.path``); None for the import system's own view.
        module_map: top-level package names read from another package's sources, as a runtime
            finder maps them: ``{"torch": "msadapter"}`` under MSAdapter, whose ``torch`` is its
            ``msadapter`` package at run time (not the ``torch/`` copy it also installs).
    """

    def __init__(self, search_path: Sequence[str] | None = None,
                 module_map: Mapping[str, str] | None = None) -> None:
        self._search_path = None if search_path is None else list(search_path)
        self._module_map = dict(module_map or {})
        self._modules: dict[str, SourceModule | None] = {}
        self._class_scopes: dict[int, dict[str, list[Binding]]] = {}
        self._active: set[tuple[int, str]] = set()

    # -- modules -------------------------------------------------------------------------------
    def _find_spec(self, name: str) -> ModuleSpec | None:
        parent, _, _ = name.rpartition(".")
        if parent:
            owner = self._module(parent)
            if owner is None or owner.search_locations is None:
                return None
            return find_spec_on_path(name, owner.search_locations)
        if self._search_path is not None:
            return find_spec_on_path(name, self._search_path)
        return find_spec(name, accept=is_safe_finder)

    def _module(self, name: str) -> SourceModule | None:
        if name in self._modules:
            return self._modules[name]
        head, dot, rest = name.partition(".")
        mapped = self._module_map.get(head)
        if mapped is not None and mapped != head:
            self._modules[name] = None
            found = self._module(mapped + dot + rest)
            self._modules[name] = found
            return found
        self._modules[name] = None  # guards against cycles while loading
        loaded = sys.modules.get(name) if self._search_path is None else None
        spec = getattr(loaded, "__spec__", None) if loaded is not None else self._find_spec(name)
        if loaded is not None and spec is None:
            module: SourceModule | None = SourceModule(name, None, None, opaque="it was created at run time")
        elif spec is None:
            module = None
        else:
            module = read_module(name, spec)
        self._modules[name] = module
        return module

    def _submodules(self, module: SourceModule) -> set[str]:
        if module.search_locations is None:
            return set()
        return {info.name for info in pkgutil.iter_modules(module.search_locations)}

    # -- lookups -------------------------------------------------------------------------------
    def _deref(self, binding: Binding, module: SourceModule) -> _Outcome:
        if binding.kind in ("class", "function"):
            return _Outcome([_Node(binding.kind, module, binding.line, binding.node)])
        if binding.kind == "module":
            target = self._module(binding.ref)
            if target is None:
                return _Outcome(names=set())
            return _Outcome([_Node("module", target)])
        if binding.kind == "from":
            source = self._module(binding.ref)
            if source is None:
                return _Outcome()
            return self._children(_Node("module", source), binding.attr)
        value = binding.node
        if isinstance(value, (ast.Name, ast.Attribute)):
            aliased = self._evaluate(value, module)
            if aliased.found:
                return aliased
        return _Outcome([_Node("value", module, binding.line, value)])

    def _evaluate(self, expr: ast.expr, module: SourceModule) -> _Outcome:
        if isinstance(expr, ast.Name):
            outcome = self._children(_Node("module", module), expr.id)
            if not outcome.found and hasattr(builtins, expr.id):
                return _Outcome([_Node("object", module, obj=getattr(builtins, expr.id))])
            return outcome
        if isinstance(expr, ast.Attribute):
            owner = self._evaluate(expr.value, module)
            result = _Outcome(unknown=owner.unknown)
            for node in owner.found:
                result.merge(self._children(node, expr.attr))
            return result
        if isinstance(expr, ast.Subscript):
            return self._evaluate(expr.value, module)
        return _Outcome(unknown=f"{ast.unparse(expr)!r} is computed at run time")

    def _children(self, node: _Node, name: str) -> _Outcome:
        key = (id(node.node) if node.node is not None else id(node.module), name)
        if key in self._active:
            return _Outcome()
        self._active.add(key)
        try:
            if node.kind == "module":
                return self._module_child(node.module, name)
            if node.kind == "class":
                return self._class_child(node, name)
            if node.kind == "object":
                if hasattr(node.obj, name):
                    return _Outcome([_Node("object", node.module, obj=getattr(node.obj, name))])
                return _Outcome(names=set(dir(node.obj)))
            what = "function" if node.kind == "function" else "value"
            return _Outcome(unknown=f"attributes of the {what} at {node.location} cannot be read statically")
        finally:
            self._active.discard(key)

    def _module_child(self, module: SourceModule, name: str) -> _Outcome:
        if module.opaque:
            # An opaque module that is imported already (a frozen stdlib module such as ``abc``) is
            # read in memory: its namespace, never its __getattr__, so nothing runs.
            live = sys.modules.get(module.name) if self._search_path is None else None
            namespace = getattr(live, "__dict__", None) or {}
            if name in namespace:
                return _Outcome([_Node("object", module, obj=namespace[name])])
            return _Outcome(unknown=f"module {module.name!r} cannot be read statically: {module.opaque}")
        result = _Outcome()
        for binding in module.scope.get(name, ()):
            result.merge(self._deref(binding, module))
        if result.found:
            return result
        submodule = self._module(f"{module.name}.{name}") if module.search_locations is not None else None
        if submodule is not None:
            return _Outcome([_Node("module", submodule)])
        if name in _IMPORT_SYSTEM_ATTRIBUTES or (name == "__path__" and module.search_locations is not None):
            # set by the import system on every module (``__path__`` on packages), never in its source
            return _Outcome([_Node("value", module)])
        if not name.startswith("_"):
            for star in module.stars:
                source = self._module(star)
                if source is not None:
                    result.merge(self._children(_Node("module", source), name))
            if result.found:
                return result
        if module.has_getattr:
            result.unknown = f"module {module.name!r} defines __getattr__"
        result.names |= set(module.scope) | self._submodules(module)
        return result

    def _class_child(self, node: _Node, name: str) -> _Outcome:
        cls = node.node
        if not isinstance(cls, ast.ClassDef):
            return _Outcome()
        scope = self._class_scopes.get(id(cls))
        if scope is None:
            scope = {}
            collect_bindings(cls.body, node.module, scope)
            self._class_scopes[id(cls)] = scope
        result = _Outcome()
        names = [name]
        # `def __register` in class `_C` is `_C__register` from outside (Python's name mangling)
        mangled = f"_{cls.name.lstrip('_')}__"
        if name.startswith(mangled) and not name.endswith("__") and len(name) > len(mangled):
            names.append("__" + name[len(mangled):])
        for key in names:
            for binding in scope.get(key, ()):
                result.merge(self._deref(binding, node.module))
            for binding in node.module.extras.get(cls.name, {}).get(key, ()):
                result.merge(_Outcome([_Node("value", node.module, binding.line, binding.node)]))
        if result.found:
            return result
        result.names |= set(scope)
        bases = [base for base in cls.bases if not isinstance(base, ast.Starred)]
        for base in bases:
            resolved = self._evaluate(base, node.module)
            if not resolved.found:
                result.unknown = result.unknown or (
                    f"base class {ast.unparse(base)!r} of {cls.name!r} cannot be read statically"
                    + (f" ({resolved.unknown})" if resolved.unknown else "")
                )
            for base_node in resolved.found:
                if base_node.kind in ("class", "object"):
                    inherited = self._children(base_node, name)
                    if inherited.found:
                        return inherited
                    result.merge(inherited)
                else:
                    result.unknown = result.unknown or f"base {ast.unparse(base)!r} is not a plain class"
        if not bases and hasattr(object, name):
            return _Outcome([_Node("object", node.module, obj=getattr(object, name))])
        decorators = [ast.unparse(item) for item in cls.decorator_list]
        if name in _DATACLASS_NAMES and any("dataclass" in item for item in decorators):
            return _Outcome([_Node("value", node.module, cls.lineno, cls)])
        others = [item for item in decorators if "dataclass" not in item]
        if others:
            result.unknown = result.unknown or f"class {cls.name!r} is decorated with {others[0]!r}"
        if any(keyword.arg == "metaclass" for keyword in cls.keywords):
            result.unknown = result.unknown or f"class {cls.name!r} has a metaclass"
        return result

    # -- public --------------------------------------------------------------------------------
    def resolve(self, target: str) -> StaticResult:
        """Resolve one dotted target.

        Args:
            target: a dotted path such as ``"pkg.mod.Class.method"``.

        Returns:
            A :class:`StaticResult`; never raises for a target that does not resolve.
        """
        parts = target.split(".")
        if not all(part.isidentifier() for part in parts):
            return StaticResult(target, MISSING, reason=f"{target!r} is not a dotted path of identifiers")
        module: SourceModule | None = None
        index = 0
        while index < len(parts):
            candidate = self._module(".".join(parts[: index + 1]))
            if candidate is None:
                break
            module, index = candidate, index + 1
        if module is None:
            names = {info.name for info in pkgutil.iter_modules(self._search_path)}
            names |= set(sys.builtin_module_names)
            return self._missing(target, "", parts[0], names, f"no module named {parts[0]!r}")
        nodes = [_Node("module", module)]
        for position in range(index, len(parts)):
            outcome = _Outcome()
            for node in nodes:
                outcome.merge(self._children(node, parts[position]))
            resolved = ".".join(parts[:position])
            if not outcome.found:
                if outcome.unknown:
                    return StaticResult(target, UNVERIFIABLE, reason=outcome.unknown, resolved=resolved)
                what = "module" if all(node.kind == "module" for node in nodes) else nodes[0].kind
                message = f"{what} {resolved!r} has no attribute {parts[position]!r}"
                return self._missing(target, resolved, parts[position], outcome.names, message)
            nodes = outcome.found
        first = nodes[0]
        return StaticResult(target, OK, kind=first.kind, location=first.location, resolved=target)

    def definition(self, target: str) -> Any:
        """Return the ``ast`` node that defines ``target`` (a function or class), or None when there is none.

        Like :meth:`resolve`, nothing is imported.
        """
        parts = target.split(".")
        if not all(part.isidentifier() for part in parts):
            return None
        module: SourceModule | None = None
        index = 0
        while index < len(parts):
            candidate = self._module(".".join(parts[: index + 1]))
            if candidate is None:
                break
            module, index = candidate, index + 1
        if module is None:
            return None
        nodes = [_Node("module", module)]
        for position in range(index, len(parts)):
            outcome = _Outcome()
            for node in nodes:
                outcome.merge(self._children(node, parts[position]))
            if not outcome.found:
                return None
            nodes = outcome.found
        return nodes[0].node

    @staticmethod
    def _missing(target: str, resolved: str, missing: str, names: set[str], message: str) -> StaticResult:
        suggestions = tuple(difflib.get_close_matches(missing, sorted(names), n=3, cutoff=0.6))
        if suggestions:
            message += "; did you mean " + " or ".join(repr(name) for name in suggestions) + "?"
        return StaticResult(target, MISSING, reason=message, resolved=resolved, suggestions=suggestions)


def resolve_static(
    targets: str | Sequence[str], *, search_path: Sequence[str] | None = None,
    module_map: Mapping[str, str] | None = None,
) -> list[StaticResult]:
    """Resolve dotted targets by reading installed sources, importing nothing.

    Args:
        targets: one dotted target or several.
        search_path: folders to search instead of the interpreter's import system.
        module_map: top-level packages to read from another package (see :class:`StaticResolver`).

    Returns:
        One :class:`StaticResult` per target, in order.
    """
    resolver = StaticResolver(search_path, module_map)
    items = [targets] if isinstance(targets, str) else list(targets)
    return [resolver.resolve(target) for target in items]
