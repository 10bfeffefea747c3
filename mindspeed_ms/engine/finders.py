"""Ask the ``sys.meta_path`` finders for a module's spec, as the import system would, importing nothing.

The one place that walks ``sys.meta_path`` by hand: target resolution (:mod:`.targets`), the import
watcher (:mod:`.watcher`, which asks the *other* finders for the real spec) and static resolution
(:mod:`.static`, which asks only finders known to run no code) all go through :func:`find_spec`.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import BuiltinImporter, FrozenImporter, ModuleSpec, PathFinder

# Imported when the adaptor arms the watcher in PyTorch mode: ``typing`` is kept off the run-time path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import ModuleType
    from typing import Any

__all__ = ["find_spec", "find_spec_on_path", "is_safe_finder", "search_locations"]


def find_spec(fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None, *,
              accept: Callable[[Any], bool] | None = None,
              errors: tuple[type[BaseException], ...] = (ImportError, ValueError, AttributeError, KeyError),
              ) -> ModuleSpec | None:
    """Return the first spec a finder of ``sys.meta_path`` gives for ``fullname``, or ``None``.

    Args:
        fullname: the module's dotted name.
        path: the parent package's search locations; ``None`` for a top-level module.
        target: passed on to the finders (a module being reloaded).
        accept: ask only the finders for which this returns True (default: every finder that
            is not an import watcher, since a watcher only delegates to the others).
        errors: exceptions of a finder that mean "this finder cannot say" rather than a failure;
            the search goes on with the next finder.

    Returns:
        The spec, or ``None`` when no finder knows the module.
    """
    for finder in list(sys.meta_path):
        if accept is not None:
            if not accept(finder):
                continue
        elif getattr(finder, "is_import_watcher", False):
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(fullname, path, target)
        except KeyError:
            # PathFinder building a namespace package's _NamespacePath reads the parent from
            # sys.modules: a namespace folder inside a package that is not imported yet.
            spec = _namespace_spec(fullname, path) if finder is PathFinder else None
        except errors:
            continue
        if spec is not None:
            return spec  # type: ignore[no-any-return]  # finders are untyped
    return None


def find_spec_on_path(fullname: str, path: Sequence[str] | None) -> ModuleSpec | None:
    """Ask ``PathFinder`` alone for ``fullname`` under ``path`` (namespace folders of unimported packages too)."""
    try:
        return PathFinder.find_spec(fullname, path)
    except KeyError:
        return _namespace_spec(fullname, path)


def _namespace_spec(fullname: str, path: Sequence[str] | None) -> ModuleSpec | None:
    """Return the spec of namespace package ``fullname`` from its portions under ``path``."""
    leaf = fullname.rpartition(".")[2]
    portions = [os.path.join(entry, leaf) for entry in (path or sys.path)
                if isinstance(entry, str) and os.path.isdir(os.path.join(entry, leaf))]
    if not portions:
        return None
    spec = ModuleSpec(fullname, None, is_package=True)
    spec.submodule_search_locations = portions
    return spec


def search_locations(spec: ModuleSpec | None) -> list[str] | None:
    """Return a package spec's submodule search locations as a plain list (``None`` for a module).

    A namespace package's locations are a ``_NamespacePath``, which recomputes itself from the
    parent package's ``__path__`` in ``sys.modules`` each time it is read: for a namespace folder
    inside a package that is not imported yet that raises ``KeyError``. The locations computed when
    the spec was found are the right ones then.
    """
    if spec is None or spec.submodule_search_locations is None:
        return None
    locations = spec.submodule_search_locations
    try:
        return list(locations)
    except KeyError:
        return list(getattr(locations, "_path", ()))


def is_safe_finder(finder: object) -> bool:
    """Return True for meta path finders known to locate modules without running any code."""
    if finder in (PathFinder, BuiltinImporter, FrozenImporter):
        return True
    # setuptools' editable-install finders (classes put on sys.meta_path) map top-level names to
    # source folders without executing anything.
    owner = finder if isinstance(finder, type) else type(finder)
    return owner.__module__.startswith("__editable__")
