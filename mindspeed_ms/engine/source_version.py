"""The version a source checkout declares, read without running any of its code.

The field's canonical MindSpore set-up puts *source checkouts* (MindSpeed, MindSpeed-LLM, Megatron-LM) on
``PYTHONPATH``: importable, but without distribution metadata. Their version is what their source declares:
``__version__`` in the package's ``__init__.py`` (or in the module it is imported from), else ``version=``
of the ``setup()`` call in the checkout's ``setup.py`` (MindSpeed: ``__version__ = '0.12.1'`` then
``version=__version__``), else a static ``[project] version`` in ``pyproject.toml``. Everything is read
with :mod:`ast`: only literals, names bound to literals and a few pure operations on them (``+``,
slicing, ``str``, ``map(str, ...)``, ``'.'.join(...)``, as Megatron's ``package_info.py`` writes it) are
evaluated; anything else means "not declared".
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache
from typing import Any

__all__ = ["declared_version", "version_in_module", "version_in_setup"]

_MISSING = object()


class _NotLiteral(Exception):
    """The expression is not one this reader evaluates."""


def _evaluate(node: ast.AST, names: dict[str, ast.AST], depth: int = 0) -> Any:
    """Evaluate ``node`` if it is built from literals and names bound to literals; else raise :class:`_NotLiteral`."""
    if depth > 20:
        raise _NotLiteral
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return _evaluate(names[node.id], names, depth + 1)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_evaluate(item, names, depth + 1) for item in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _evaluate(node.left, names, depth + 1), _evaluate(node.right, names, depth + 1)
        if type(left) is type(right) and isinstance(left, (str, tuple, int)):
            return left + right
        raise _NotLiteral
    if isinstance(node, ast.Subscript):
        value = _evaluate(node.value, names, depth + 1)
        if not isinstance(value, (str, tuple)):
            raise _NotLiteral
        index = node.slice
        if isinstance(index, ast.Slice):
            bounds = [None if part is None else _evaluate(part, names, depth + 1)
                      for part in (index.lower, index.upper, index.step)]
            if not all(bound is None or isinstance(bound, int) for bound in bounds):
                raise _NotLiteral
            return value[slice(*bounds)]
        position = _evaluate(index, names, depth + 1)
        if not isinstance(position, int):
            raise _NotLiteral
        return value[position]
    if isinstance(node, ast.Call) and not node.keywords:
        return _call(node, names, depth)
    raise _NotLiteral


def _call(node: ast.Call, names: dict[str, ast.AST], depth: int) -> Any:
    function, args = node.func, node.args
    if isinstance(function, ast.Name) and function.id == "str" and len(args) == 1:
        return str(_evaluate(args[0], names, depth + 1))
    if isinstance(function, ast.Name) and function.id == "map" and len(args) == 2 \
            and isinstance(args[0], ast.Name) and args[0].id == "str":
        return tuple(str(item) for item in _evaluate(args[1], names, depth + 1))
    if isinstance(function, ast.Attribute) and function.attr == "join" and len(args) == 1:
        separator, items = _evaluate(function.value, names, depth + 1), _evaluate(args[0], names, depth + 1)
        if isinstance(separator, str) and isinstance(items, tuple) and all(isinstance(i, str) for i in items):
            return separator.join(items)
    raise _NotLiteral


def _module_names(tree: ast.Module) -> dict[str, ast.AST]:
    """Return ``name -> expression`` of the module-level assignments (the last one wins, as when run)."""
    names: dict[str, ast.AST] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and statement.value is not None:
            names[statement.target.id] = statement.value
    return names


@lru_cache(maxsize=256)
def _parse(path: str, mtime_ns: int) -> ast.Module | None:
    try:
        with open(path, "rb") as stream:
            return ast.parse(stream.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None


def _tree(path: str) -> ast.Module | None:
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _parse(path, mtime)


def _as_version(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def version_in_module(path: str, package: str | None = None, package_dir: str | None = None,
                      _hops: int = 0) -> tuple[str | None, str | None]:
    """Return ``(__version__, the file that sets it)`` for module ``path``, or ``(None, None)``.

    ``from .info import __version__`` (or ``from <package>.info import __version__``, absolute inside
    ``package``, whose folder is ``package_dir``) is followed into that module.
    """
    tree = _tree(path)
    if tree is None:
        return None, None
    names = _module_names(tree)
    if "__version__" in names:
        try:
            version = _as_version(_evaluate(names["__version__"], names))
        except (_NotLiteral, IndexError, TypeError, RecursionError):
            return None, None
        return (version, path) if version else (None, None)
    if _hops > 2:
        return None, None
    for statement in tree.body:
        if not isinstance(statement, ast.ImportFrom) or not any(
                alias.name == "__version__" and alias.asname in (None, "__version__") for alias in statement.names):
            continue
        module = statement.module or ""
        if statement.level == 1 and module:
            base, parts = os.path.dirname(path), module.split(".")
        elif statement.level == 0 and package and package_dir and module.startswith(package + "."):
            base, parts = package_dir, module[len(package) + 1:].split(".")
        else:
            continue
        candidate = os.path.join(base, *parts)
        for file in (candidate + ".py", os.path.join(candidate, "__init__.py")):
            if os.path.isfile(file):
                return version_in_module(file, package, package_dir, _hops + 1)
    return None, None


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def version_in_setup(path: str, distribution: str | None = None) -> str | None:
    """Return ``version=`` of the ``setup()`` call in ``setup.py`` at ``path``, or None.

    When ``distribution`` is given and the call's ``name=`` reads as another project, None (that setup.py
    builds something else).
    """
    tree = _tree(path)
    if tree is None:
        return None
    names = _module_names(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if called != "setup":
            continue
        version_node = _keyword(node, "version")
        if version_node is None:
            continue
        name_node = _keyword(node, "name")
        try:
            if distribution is not None and name_node is not None:
                name = _evaluate(name_node, names)
                if isinstance(name, str) and _canonical(name) != _canonical(distribution):
                    return None
            return _as_version(_evaluate(version_node, names))
        except (_NotLiteral, IndexError, TypeError, RecursionError):
            return None
    return None


def _version_in_pyproject(path: str, distribution: str | None) -> str | None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11: setup.py and __version__ only
        return None
    try:
        with open(path, "rb") as stream:
            project = tomllib.load(stream).get("project", {})
    except (OSError, ValueError):
        return None
    if distribution is not None and isinstance(project.get("name"), str) \
            and _canonical(project["name"]) != _canonical(distribution):
        return None
    return _as_version(project.get("version"))


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def declared_version(package_dir: str, top_level_dir: str | None = None, distribution: str | None = None,
                     package: str | None = None) -> tuple[str | None, str | None]:
    """Return ``(version, file that declares it)`` for the package at ``package_dir``; ``(None, None)`` if none.

    Args:
        package_dir: the imported package's folder (``.../megatron/core``).
        top_level_dir: the folder of its top-level package (``.../megatron``); the checkout's ``setup.py``
            and ``pyproject.toml`` are looked for beside it. Defaults to ``package_dir``.
        distribution: the distribution the version is for (a ``setup.py`` naming another one is ignored).
        package: the package's dotted name (``megatron.core``), to follow absolute imports of ``__version__``.
    """
    version, where = version_in_module(os.path.join(package_dir, "__init__.py"), package, package_dir)
    if version is not None:
        return version, where
    root = os.path.dirname(top_level_dir or package_dir)
    setup = os.path.join(root, "setup.py")
    version = version_in_setup(setup, distribution)
    if version is not None:
        return version, setup
    pyproject = os.path.join(root, "pyproject.toml")
    version = _version_in_pyproject(pyproject, distribution)
    if version is not None:
        return version, pyproject
    return None, None
