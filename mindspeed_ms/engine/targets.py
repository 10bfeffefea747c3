"""Dotted target paths: validation, locating the module part, and resolution without side effects.

A target is ``pkg.mod`` (a module), ``pkg.mod.name`` (a module attribute) or
``pkg.mod.Class.Inner.attr`` (a class attribute at any depth). The module part is the longest
prefix that is an importable module. Nothing here imports a module: targets whose module is not
imported yet are reported as such, so the caller can arm an import hook instead.

Class attributes are read through ``vars(klass)`` along the MRO rather than ``getattr``: ``getattr``
would hand back the *bound* result of a descriptor (the function inside a ``staticmethod``, the
getter's value of a ``property``), and writing that back would silently change the attribute's kind.
"""

from __future__ import annotations

import difflib
import keyword
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .errors import PatchValidationError, TargetNotFoundError
from .finders import find_spec, search_locations

__all__ = ["parse_target", "Located", "locate", "resolve_target", "suggest", "top_level_exists", "not_found",
           "find_module_spec"]

_MISSING: Any = object()


def parse_target(path: object) -> tuple[str, ...]:
    """Validate a dotted target path and split it into its parts.

    Args:
        path: the dotted path, e.g. ``"megatron.core.utils.GlobalMemoryBuffer.get_tensor"``.

    Returns:
        The path's parts.

    Raises:
        PatchValidationError: the path is not a non-empty string of dot-separated identifiers
            (no leading, trailing or doubled dots, no keywords).
    """
    if not isinstance(path, str):
        raise PatchValidationError(
            f"target must be a dotted path string such as 'pkg.module.function', got {type(path).__name__} "
            f"{path!r}",
            target=None,
        )
    if not path:
        raise PatchValidationError("target is empty: give a dotted path such as 'pkg.module.function'",
                                   target=path)
    parts = tuple(path.split("."))
    for index, part in enumerate(parts):
        if not part:
            where = "leading" if index == 0 else "trailing" if index == len(parts) - 1 else "doubled"
            raise PatchValidationError(f"target {path!r} has a {where} dot: write it as 'pkg.module.name'",
                                       target=path)
        if not part.isidentifier():
            raise PatchValidationError(f"target {path!r}: part {part!r} is not a Python identifier",
                                       target=path)
        if keyword.iskeyword(part):
            raise PatchValidationError(f"target {path!r}: part {part!r} is a Python keyword, not a name",
                                       target=path)
    return parts


@dataclass
class Located:
    """Where a target stands right now, found without importing anything.

    ``waiting_for`` is set when the target cannot be resolved until a module is imported: it names
    that module (the next one along the path). Otherwise ``owner``/``name`` say where the target
    lives and ``raw`` is the object found there (``_MISSING`` when absent); ``defined_on`` is the
    class of the MRO whose ``__dict__`` holds it (``owner`` itself unless inherited).
    """

    target: str
    module_name: str = ""
    waiting_for: str | None = None
    owner: Any = None
    name: str = ""
    raw: Any = _MISSING
    defined_on: Any = None
    is_module: bool = False

    @property
    def exists(self) -> bool:
        return self.raw is not _MISSING


def find_module_spec(fullname: str, search: Any = None) -> Any:
    """Ask the ``sys.meta_path`` finders for ``fullname``'s spec, importing nothing (see :mod:`.finders`).

    Args:
        fullname: the module's dotted name.
        search: the parent package's ``__path__`` (``submodule_search_locations``); ``None`` for a
            top-level module.
    """
    return find_spec(fullname, search)


def _deepest_module(parts: tuple[str, ...], start: int, spec: Any) -> str:
    """Follow ``parts[start:]`` through submodule specs from ``spec``; return the deepest module's name."""
    name = ".".join(parts[:start])
    while start < len(parts) and spec is not None and spec.submodule_search_locations is not None:
        child = f"{name}.{parts[start]}"
        spec = find_module_spec(child, search_locations(spec))
        if spec is None:
            break
        name, start = child, start + 1
    return name


def top_level_exists(name: str) -> bool:
    """Tell whether the top-level module ``name`` is imported or importable (imports nothing)."""
    return name in sys.modules or find_module_spec(name) is not None


def _class_lookup(klass: type, name: str) -> tuple[Any, Any]:
    for base in klass.__mro__:
        namespace = vars(base)
        if name in namespace:
            return namespace[name], base
    return _MISSING, None


def _has_class_getattr(kind: type) -> bool:
    return kind is not ModuleType and (getattr(kind, "__getattr__", None) is not None
                                       or kind.__getattribute__ is not ModuleType.__getattribute__)


def _child(owner: Any, name: str) -> tuple[Any, Any]:
    """Read ``owner.name`` without triggering descriptors; return (raw value, defining object)."""
    if isinstance(owner, type):
        return _class_lookup(owner, name)
    if isinstance(owner, ModuleType):
        namespace = owner.__dict__
        if name in namespace:
            return namespace[name], owner
        # A module-level __getattr__ (PEP 562), or one of a module subclass (MSAdapter's torch modules
        # are such proxies, forwarding to msadapter), may still provide it: that is a real attribute.
        if "__getattr__" in namespace or _has_class_getattr(type(owner)):
            try:
                return getattr(owner, name), None
            except AttributeError:
                return _MISSING, None
        return _MISSING, None
    try:
        return getattr(owner, name), owner
    except AttributeError:
        return _MISSING, None


def _attribute_of_plain_module(path: str, parts: tuple[str, ...]) -> Located | None:
    """Locate the usual case at once: an attribute (not a submodule) of a plain imported module; else None."""
    if len(parts) < 2 or path in sys.modules:
        return None
    parent_name = path.rpartition(".")[0]
    parent = sys.modules.get(parent_name)
    if type(parent) is not ModuleType:
        return None
    found = parent.__dict__.get(parts[-1], _MISSING)
    if found is _MISSING or isinstance(found, ModuleType):
        return None
    return Located(path, module_name=parent_name, owner=parent, name=parts[-1], raw=found, defined_on=parent)


def locate(path: str, parts: tuple[str, ...] | None = None) -> Located:
    """Find where ``path`` stands now, importing nothing.

    Args:
        path: the dotted target.
        parts: ``parse_target(path)`` when the caller has it already.

    Returns:
        A :class:`Located`; ``waiting_for`` names the module to wait for when the target's module
        (or a module on its way) is not imported yet.

    Raises:
        TargetNotFoundError: a part of the path does not exist in an imported module or class, or
            the top-level module cannot be found at all.
    """
    if parts is None:
        parts = parse_target(path)
    modules = sys.modules
    usual = _attribute_of_plain_module(path, parts)
    if usual is not None:
        return usual
    # Longest imported prefix. A module still executing its body counts as imported: it can only
    # be one on the current import chain (apply() called from inside it), and waiting for it would
    # wait for an import that has already passed the hook.
    index = len(parts)
    while index > 0 and modules.get(".".join(parts[:index])) is None:
        index -= 1
    if index == 0:
        spec = find_module_spec(parts[0])
        if spec is None:
            raise not_found(path, parts, 0, None)
        # Wait for the deepest module of the path, found statically, so the patch goes in the moment
        # that module has executed, before a sibling module can `from` import the original.
        return Located(path, waiting_for=_deepest_module(parts, 1, spec))
    module_name = ".".join(parts[:index])
    owner: Any = modules[module_name]
    if index == len(parts):
        parent_name, _, leaf = module_name.rpartition(".")
        parent = modules.get(parent_name) if parent_name else None
        return Located(path, module_name=module_name, owner=parent, name=leaf, raw=owner,
                       defined_on=parent, is_module=True)
    for position in range(index, len(parts)):
        name = parts[position]
        raw, defined_on = _child(owner, name)
        if isinstance(owner, ModuleType) and (raw is _MISSING or isinstance(raw, ModuleType)):
            # Not imported yet (or only a module attribute): a submodule waits for its import.
            fullname = f"{owner.__name__}.{name}"
            search = getattr(owner, "__path__", None)
            spec = find_module_spec(fullname, search) if search is not None and fullname not in modules else None
            if spec is not None:
                return Located(path, module_name=module_name,
                               waiting_for=_deepest_module(parts, position + 1, spec))
        if position == len(parts) - 1:
            return Located(path, module_name=module_name, owner=owner, name=name, raw=raw,
                           defined_on=defined_on, is_module=isinstance(raw, ModuleType))
        if raw is _MISSING:
            raise not_found(path, parts, position, owner)
        owner = raw
        if isinstance(owner, ModuleType):
            module_name = owner.__name__
    raise AssertionError("unreachable")  # pragma: no cover - the loop always returns


def suggest(name: str, candidates: Any) -> tuple[str, ...]:
    """Return up to three close matches for ``name`` among ``candidates``."""
    return tuple(difflib.get_close_matches(name, [c for c in candidates if isinstance(c, str)], n=3,
                                           cutoff=0.6))


def _names_of(owner: Any) -> list[str]:
    if owner is None:
        return sorted(name for name in sys.modules if "." not in name)
    names: set[str] = set()
    if isinstance(owner, type):
        for base in owner.__mro__:
            names.update(vars(base))
    elif isinstance(owner, ModuleType):
        names.update(owner.__dict__)
        search = getattr(owner, "__path__", None)
        if search is not None:
            import pkgutil

            names.update(info.name for info in pkgutil.iter_modules(search))
    else:
        names.update(dir(owner))
    return sorted(names)


def not_found(path: str, parts: tuple[str, ...], position: int, owner: Any) -> TargetNotFoundError:
    """Build the error for a target whose part ``parts[position]`` does not exist under ``owner``."""
    missing = parts[position]
    resolved = ".".join(parts[:position])
    matches = suggest(missing, _names_of(owner))
    where = f"{resolved!r} has no attribute or submodule {missing!r}" if resolved else \
        f"no module named {missing!r} can be found"
    hint = f"; did you mean {', '.join(repr(m) for m in matches)}?" if matches else \
        "; check the spelling, or register with create_dummy=True to create it on purpose"
    return TargetNotFoundError(f"cannot patch {path!r}: {where}{hint}", target=path, resolved=resolved,
                               missing=missing, suggestions=matches)


def resolve_target(path: str) -> Located:
    """Resolve ``path`` to its owner and current object, importing its module if needed.

    Unlike :func:`locate`, this imports the modules along the path (it is what ``verify`` uses).

    Raises:
        PatchValidationError: the path is malformed.
        TargetNotFoundError: part of the path does not exist.
    """
    import importlib

    parts = parse_target(path)
    while True:
        located = locate(path, parts)
        if located.waiting_for is None:
            if not located.exists:
                raise not_found(path, parts, len(parts) - 1, located.owner)
            return located
        try:
            importlib.import_module(located.waiting_for)
        except ModuleNotFoundError as error:
            if error.name != located.waiting_for:
                raise
            missing_at = len(located.waiting_for.split(".")) - 1
            raise not_found(path, parts, missing_at, sys.modules.get(".".join(parts[:missing_at]))) from error
