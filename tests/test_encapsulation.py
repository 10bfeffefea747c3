"""Encapsulation of mindspeed_ms, read from its sources: private names stay in their module, state behind functions.

Two checks over the abstract syntax trees of ``mindspeed_ms/`` and ``tests/`` (every import counts, those inside
functions too; nothing is imported):

- **private names**: no file reaches a private name (``_name``, not a dunder) of another mindspeed_ms module: not by
  ``from m import _name``, not by ``m._name`` / ``SomeClass._name`` on what it imported from there, not through a
  string (``getattr(m, "_name")``, ``monkeypatch.setattr(m, "_name", ...)``, ``"mindspeed_ms.m._name"``). A private
  module (``ops/_dispatch.py``) is private to its package: only modules inside that package import it.
- **private attributes**: ``obj._x`` where ``_x`` is a private attribute only classes of *other* modules define (in
  their body or as ``self._x``): the receiver's class cannot be known from the source, so the attribute's name decides
  (``self``/``cls`` and names imported from other packages are never receivers of ours; in the package, a
  ``getattr(obj, "_x", None)`` probe is duck typing on other packages' objects and is not counted).
- **module-level mutable state**: a module-level binding that holds mutable state (a dict, list or set, a lock, a
  ContextVar, an instance of a class that is not a frozen value, or a name some function rebinds with ``global``) is
  reached from no other file: other modules and tests go through the functions of its module.

The scanner is tested on planted violations in a throwaway package too, so that it cannot pass by finding nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from _helpers import ROOT, write_files

#: Calls whose result is mutable state (the last component of the callee's name).
MUTABLE_FACTORIES = frozenset({
    "dict", "list", "set", "bytearray", "defaultdict", "OrderedDict", "Counter", "deque", "ChainMap",
    "WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "local", "Lock", "RLock", "Condition", "Event",
    "Semaphore", "ContextVar",
})
#: CapWords callables whose instances are values (immutable): a module-level binding of one is a constant.
IMMUTABLE_CLASSES = frozenset({
    "Path", "PurePath", "PurePosixPath", "MappingProxyType", "TypeVar", "ParamSpec", "Decimal", "Fraction",
    "Version", "SpecifierSet", "Specifier", "Requirement", "NewType",
})
#: Value-class markers of a class defined in the scanned package (its instances are constants).
VALUE_BASES = frozenset({"NamedTuple", "Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "Exception"})
STRING_REFERENCE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*)?$")
ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


@dataclass(frozen=True, order=True)
class Finding:
    """One place where a file reaches what it should not."""

    path: str
    line: int
    kind: str  # "private name" or "mutable state"
    name: str  # the dotted name reached

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} {self.name}"


def is_private(name: str) -> bool:
    """Tell whether ``name`` is private: a leading underscore, and not a dunder."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass
class Package:
    """What the scan knows of the package: its modules, their mutable bindings, its value classes."""

    name: str
    modules: dict[str, Path]
    mutable: dict[str, set[str]] = field(default_factory=dict)
    value_classes: set[str] = field(default_factory=set)
    #: private attribute name -> the classes (``module.Class``) that define it (in their body or as ``self._x``)
    private_attributes: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def read(cls, package_dir: Path) -> Package:
        """Index the package in ``package_dir`` (every folder of it with an ``__init__.py``)."""
        modules: dict[str, Path] = {}
        stubs = [p for p in package_dir.rglob("*.pyi") if not p.with_suffix(".py").exists()]  # compiled modules
        for path in sorted(package_dir.rglob("*.py")) + sorted(stubs):
            folders = path.relative_to(package_dir).parents
            if not all((package_dir / folder / "__init__.py").is_file() for folder in folders):
                continue  # not part of the package (bootstrap/startup's sitecustomize is its own top-level module)
            parts = path.relative_to(package_dir.parent).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
        package = cls(package_dir.name, modules)
        trees = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in modules.items()
                 if path.suffix == ".py"}
        for tree in trees.values():
            package.value_classes |= _value_classes(tree)
        for name, tree in trees.items():
            package.mutable[name] = _mutable_bindings(tree, package.value_classes)
            for attribute, owner in _private_attributes(tree):
                package.private_attributes.setdefault(attribute, set()).add(f"{name}.{owner}")
        return package

    def module_of(self, path: Path) -> str | None:
        """Return the module ``path`` is, or None for a file outside the package (a test, a script)."""
        for name, module_path in self.modules.items():
            if module_path == path:
                return name
        return None

    def may_import(self, own: str | None, module: str) -> bool:
        """Tell whether module ``own`` may import ``module``: a private module only from inside its package."""
        parts = module.split(".")
        for index, part in enumerate(parts[1:], start=1):
            if is_private(part):
                package = ".".join(parts[:index])
                return own is not None and (own == package or own.startswith(package + "."))
        return True


def _value_classes(tree: ast.Module) -> set[str]:
    """Return the classes of ``tree`` whose instances are values: frozen dataclasses, named tuples, enums, errors."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {_last_name(base) for base in node.bases}
        frozen = any(isinstance(decorator, ast.Call) and _last_name(decorator.func) == "dataclass"
                     and any(k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
                             for k in decorator.keywords)
                     for decorator in node.decorator_list)
        if frozen or bases & VALUE_BASES or any(base.endswith("Error") for base in bases if base):
            found.add(node.name)
    return found


def _private_attributes(tree: ast.Module) -> Iterator[tuple[str, str]]:
    """Yield ``(attribute, class)`` for the private attributes the classes of ``tree`` define: in their body, or
    as ``self._x = ...`` in their methods."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [statement.name]
            elif isinstance(statement, ast.Assign):
                names = [target.id for target in statement.targets if isinstance(target, ast.Name)]
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                names = [statement.target.id]
            else:
                names = []
            yield from ((name, node.name) for name in names if is_private(name))
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.args.args:
                self_name = statement.args.args[0].arg
                for inner in ast.walk(statement):
                    if (isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store)
                            and isinstance(inner.value, ast.Name) and inner.value.id == self_name
                            and is_private(inner.attr)):
                        yield inner.attr, node.name


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _last_name(node.value)
    return ""


def _is_mutable(value: ast.expr | None, value_classes: set[str]) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    if not isinstance(value, ast.Call):
        return False
    name = _last_name(value.func)
    if name in MUTABLE_FACTORIES:
        return True
    capwords = name[:1].isupper() and not name.isupper()
    return capwords and name not in IMMUTABLE_CLASSES and name not in value_classes


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Yield the statements run at import (into if/try/with blocks, not into functions or classes)."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                yield from _module_level(getattr(statement, block, []))
            for handler in getattr(statement, "handlers", []):
                yield from _module_level(handler.body)


def _mutable_bindings(tree: ast.Module, value_classes: set[str]) -> set[str]:
    """Return the module-level names of ``tree`` that hold mutable state."""
    names = set()
    for statement in _module_level(tree.body):
        if isinstance(statement, ast.Assign) and _is_mutable(statement.value, value_classes):
            names |= {target.id for target in statement.targets if isinstance(target, ast.Name)}
        elif (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
              and _is_mutable(statement.value, value_classes)):
            names.add(statement.target.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):  # rebound by a function: state, whatever its value's type
            names |= set(node.names)
    return {name for name in names if not (name.startswith("__") and name.endswith("__"))}


# -- resolving what a file's names refer to ------------------------------------------------------------------------

# ("module", dotted) or ("object", module, qualified name)
Ref = tuple[str, ...]


class _FileScan(ast.NodeVisitor):
    """Find what one file reaches: private names of other modules, mutable state of other modules."""

    def __init__(self, package: Package, path: Path, shown: str) -> None:
        self.package, self.path, self.shown = package, path, shown
        self.own = package.module_of(path)
        self.bindings: dict[str, Ref] = {}
        self.foreign: set[str] = set()  # names bound to what other packages hold (torch, mindspore, ...)
        self.findings: list[Finding] = []

    # imports bind names to modules and to objects of modules
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not self._ours(alias.name):
                self.foreign.add(alias.asname or alias.name.split(".")[0])
                continue
            self._check_module(alias.name, node.lineno)
            if alias.asname:
                self.bindings[alias.asname] = ("module", alias.name)
            else:
                head = alias.name.split(".")[0]
                self.bindings[head] = ("module", head)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = self._absolute(node)
        if module is None or not self._ours(module):
            self.foreign |= {alias.asname or alias.name for alias in node.names}
            return
        self._check_module(module, node.lineno)
        for alias in node.names:
            if alias.name == "*":
                continue
            ref = self._member(("module", module), alias.name, node.lineno)
            self.bindings[alias.asname or alias.name] = ref

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._resolve(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _last_name(node.func)
        second = node.args[1] if len(node.args) >= 2 else None
        attribute = second.value if isinstance(second, ast.Constant) and isinstance(second.value, str) else None
        through_monkeypatch = name in {"setattr", "delattr"} and isinstance(node.func, ast.Attribute)
        if (name in ATTRIBUTE_CALLS or through_monkeypatch) and attribute is not None:
            owner = self._resolve(node.args[0])
            if owner is not None:
                self._member(owner, attribute, node.lineno)
            elif self.own is None:  # in a test: monkeypatch.setattr(obj, "_x", ...); the package's own
                # getattr(obj, "_x", None) probes are duck typing on other packages' objects (MSAdapter's groups)
                self._instance_attribute(node.args[0], attribute, node.lineno)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        text = node.value
        if isinstance(text, str) and STRING_REFERENCE.match(text) and self._ours(text):
            module_part, _, attributes = text.partition(":")
            ref = self._dotted(module_part.split("."), node.lineno)
            for attribute in attributes.split(".") if attributes else ():
                ref = self._member(ref, attribute, node.lineno) if ref is not None else None

    # helpers
    def _ours(self, dotted: str) -> bool:
        return dotted == self.package.name or dotted.startswith(self.package.name + ".")

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        if not node.level:
            return node.module
        if self.own is None:
            return None
        is_package = self.package.modules[self.own].name == "__init__.py"
        parts = self.own.split(".")[: len(self.own.split(".")) - node.level + (1 if is_package else 0)]
        return ".".join(parts + ([node.module] if node.module else []))

    def _check_module(self, module: str, line: int) -> None:
        if not self.package.may_import(self.own, module):
            self._found(line, "private name", module)

    def _member(self, owner: Ref, name: str, line: int) -> Ref:
        """Return what ``owner.name`` refers to, noting a private name or mutable state of another module."""
        if owner[0] == "module":
            module = owner[1]
            submodule = f"{module}.{name}"
            if submodule in self.package.modules:
                self._check_module(submodule, line)
                return ("module", submodule)
            if module != self.own:
                if is_private(name):
                    self._found(line, "private name", submodule)
                elif name in self.package.mutable.get(module, ()):
                    self._found(line, "mutable state", submodule)
            return ("object", module, name)
        module, qualified = owner[1], owner[2]
        if module != self.own and is_private(name):
            self._found(line, "private name", f"{module}.{qualified}.{name}")
        return ("object", module, f"{qualified}.{name}")

    def _dotted(self, parts: list[str], line: int) -> Ref | None:
        ref: Ref | None = ("module", parts[0]) if parts[0] == self.package.name else None
        for part in parts[1:]:
            if ref is None:
                return None
            ref = self._member(ref, part, line)
        return ref

    def _resolve(self, node: ast.expr) -> Ref | None:
        if isinstance(node, ast.Name):
            return self.bindings.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = self._resolve(node.value)
            if owner is None:
                self.visit(node.value)  # e.g. a call in the chain: its arguments still count
                self._instance_attribute(node.value, node.attr, node.lineno)
                return None
            return self._member(owner, node.attr, node.lineno)
        self.visit(node)
        return None

    def _instance_attribute(self, receiver: ast.expr, attribute: str, line: int) -> None:
        """Note ``receiver.attribute`` when it is a private attribute only classes of other modules define.

        The receiver's class is not known from the source: what counts is the attribute's name (``self`` / ``cls``
        and names imported from other packages are not receivers of ours).
        """
        if isinstance(receiver, ast.Name) and (receiver.id in ("self", "cls") or receiver.id in self.foreign):
            return
        classes = self.package.private_attributes.get(attribute)
        if classes and not any(owner.rpartition(".")[0] == self.own for owner in classes):
            self._found(line, "private attribute", f"{min(classes)}.{attribute}")

    def _found(self, line: int, kind: str, name: str) -> None:
        self.findings.append(Finding(self.shown, line, kind, name))


def scan(package_dir: Path, other_dirs: list[Path], root: Path) -> list[Finding]:
    """Return every place in the package and in ``other_dirs`` that reaches a private name or the mutable state
    of another module of the package in ``package_dir``; paths shown relative to ``root``."""
    package = Package.read(package_dir)
    files = sorted(package_dir.rglob("*.py")) + sorted(p for d in other_dirs for p in d.rglob("*.py"))
    findings: list[Finding] = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        file_scan = _FileScan(package, path, str(path.relative_to(root)))
        # bindings first (an import inside a function may come after a use above it in the file)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                file_scan.visit(node)
        file_scan.findings.clear()
        file_scan.visit(tree)
        findings.extend(file_scan.findings)
    return sorted(set(findings))


# -- the checks ----------------------------------------------------------------------------------------------------

def test_no_file_reaches_a_private_name_or_the_mutable_state_of_another_mindspeed_ms_module() -> None:
    findings = scan(ROOT / "mindspeed_ms", [ROOT / "tests"], ROOT)
    assert not findings, "\n".join(map(str, findings))


def test_the_scan_sees_the_package_state_it_guards() -> None:
    package = Package.read(ROOT / "mindspeed_ms")
    assert "mindspeed_ms.bootstrap.startup.sitecustomize" not in package.modules  # not part of the package
    assert "mindspeed_ms.engine.registry" in package.modules
    assert "_default" in package.mutable["mindspeed_ms.adaptation.core"]  # the process's default Adaptation
    assert "_default" in package.mutable["mindspeed_ms.engine.watcher"]  # the process's import watcher
    assert "mindspeed_ms.adaptation.core.Adaptation" in package.private_attributes["_framework"]


# -- the scanner finds what it must (planted violations in a throwaway package) ------------------------------------

#: A throwaway package and its tests; each line that must be found says so in a ``# finds: kind name`` comment
#: (several separated by ``;``); no other line may be found.
PLANTED = {
    "pkg/__init__.py": "",
    "pkg/state.py": """\
        import threading
        from dataclasses import dataclass

        CACHE = {}
        ITEMS: list = []
        LOCK = threading.Lock()
        TABLE = ("a", "b")
        _hidden = {}
        current = None


        @dataclass(frozen=True)
        class Point:
            x: int = 0


        class Box:
            def __init__(self):
                self._content = []

            def _peek(self):
                return self._content


        ORIGIN = Point()
        BOX = Box()


        def remember(value):
            global current
            current = value
            _hidden[value] = BOX._peek()
            return TABLE
        """,
    "pkg/sub/__init__.py": "from pkg.sub import _deep\n",  # a private module is its package's to import
    "pkg/sub/_deep.py": "VALUE = 1\n",
    "pkg/sub/near.py": "from pkg.sub._deep import VALUE\nfrom ._deep import VALUE as V\n",
    "pkg/user.py": """\
        import pkg.state
        from pkg import state as st
        from pkg.state import CACHE, TABLE, ORIGIN, Box  # finds: mutable state pkg.state.CACHE
        from . import state
        from threading import Thread


        def use(box, thread: Thread):
            import pkg.sub._deep  # finds: private name pkg.sub._deep
            found = st._hidden  # finds: private name pkg.state._hidden
            found = state.ITEMS  # finds: mutable state pkg.state.ITEMS
            found = pkg.state.LOCK  # finds: mutable state pkg.state.LOCK
            found = st.current  # finds: mutable state pkg.state.current
            found = getattr(st, "_hidden")  # finds: private name pkg.state._hidden
            found = Box._peek  # finds: private name pkg.state.Box._peek
            found = st.BOX  # finds: mutable state pkg.state.BOX
            found = box._content  # finds: private attribute pkg.state.Box._content
            found = box.items()._peek()  # finds: private attribute pkg.state.Box._peek
            return found, TABLE, ORIGIN, st.remember(1), Thread._content, getattr(box, "_peek", None)
        """,
    "tests/test_user.py": """\
        from pkg.state import _hidden  # finds: private name pkg.state._hidden
        from pkg.sub._deep import VALUE  # finds: private name pkg.sub._deep
        from pkg.state import BOX  # finds: mutable state pkg.state.BOX


        def test_it(monkeypatch, box):
            monkeypatch.setattr("pkg.state._hidden", {})  # finds: private name pkg.state._hidden
            monkeypatch.setattr(__import__("pkg"), "state", None)
            monkeypatch.setattr(box, "_content", [])  # finds: private attribute pkg.state.Box._content
            return _hidden, VALUE, "pkg.state:_hidden"  # finds: private name pkg.state._hidden
        """,
}


def _marked(root: Path) -> set[tuple[str, int, str, str]]:
    """Return the findings the ``# finds:`` comments under ``root`` announce."""
    marked = set()
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            _, mark, announced = line.partition("# finds: ")
            for item in announced.split(";") if mark else ():
                kind, _, name = item.strip().rpartition(" ")
                marked.add((str(path.relative_to(root)), number, kind, name))
    return marked


def test_the_scan_finds_each_kind_of_planted_violation_and_nothing_else(tmp_path: Path) -> None:
    write_files(tmp_path, PLANTED)
    found = {(f.path, f.line, f.kind, f.name) for f in scan(tmp_path / "pkg", [tmp_path / "tests"], tmp_path)}
    expected = _marked(tmp_path)
    assert len(expected) == 17
    assert found == expected


def test_a_clean_package_gives_no_finding(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/state.py": "_cache = {}\nLIMIT = 3\n\ndef cached(key):\n    return _cache.get(key, LIMIT)\n",
        "pkg/user.py": "from pkg.state import LIMIT, cached\n\nVALUE = cached('a') + LIMIT\n",
        "tests/test_user.py": "import pkg.state\n\ndef test_it():\n    assert pkg.state.cached('x') == 3\n",
    })
    assert scan(tmp_path / "pkg", [tmp_path / "tests"], tmp_path) == []
