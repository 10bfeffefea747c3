"""What a registered replacement is, and its name for a person.

A replacement is a value (a function, a class, any object), a lazy ``"pkg.mod:attr"`` reference
imported when the patch is installed, ``None`` (a placeholder raising ``NotImplementedError``), or
:data:`NO_REPLACEMENT` (the target has wraps only).
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType
from typing import Any

from .errors import PatchApplyError
from .journal import MISSING
from .signatures import unwrap_descriptor

__all__ = ["NO_REPLACEMENT", "describe", "is_reference", "qualified_name", "resolve_reference"]

#: the replacement of a target that has none (wraps only, or a block)
NO_REPLACEMENT: Any = MISSING

_REFERENCE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_reference(value: Any) -> bool:
    """Tell whether ``value`` is a lazy ``"pkg.mod:attr"`` reference to a replacement."""
    return isinstance(value, str) and _REFERENCE.match(value) is not None


def resolve_reference(reference: str, *, target: str | None = None) -> Any:
    """Import ``"pkg.mod:attr"`` and return the attribute (dotted attributes allowed after the colon).

    Raises:
        PatchApplyError: the module cannot be imported or has no such attribute.
    """
    module_name, _, attribute = reference.partition(":")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as error:
        raise PatchApplyError(f"the replacement {reference!r} of {target!r} cannot be loaded: "
                              f"{type(error).__name__}: {error}", target=target) from error
    return value


def describe(obj: Any) -> str:
    """Name a replacement or wrap for a person (a lazy reference is shown as written)."""
    return obj if is_reference(obj) else qualified_name(obj)


def qualified_name(obj: Any) -> str:
    """Return ``module.qualname`` of ``obj`` (or its repr when it has none)."""
    obj = unwrap_descriptor(obj)
    if isinstance(obj, ModuleType):
        return obj.__name__
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        return repr(obj)
    module = getattr(obj, "__module__", None)
    return f"{module}.{qualname}" if module else str(qualname)
