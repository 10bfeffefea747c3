"""Check one registration before the registry records it: target, kind, replacement, requirements.

:meth:`~mindspeed_ms.engine.registry.PatchRegistry.register` calls :func:`check_registration` first;
what it returns is what the registry records. Nothing is imported here except, for a replacement that
is not callable, the target's module when it is imported already (to refuse a non-callable for a
callable).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from .errors import AdaptationError, PatchValidationError
from .replacements import is_reference
from .requirements import normalize_requires
from .targets import locate, parse_target

__all__ = ["KINDS", "check_registration"]

#: the kinds a registration may ask for; ``"auto"`` is MindSpeed's rule (see :func:`check_registration`)
KINDS = ("auto", "replace", "wrap")


def check_registration(target: str, new_func: Any, kind: str, requires: None | str | Sequence[str]
                       ) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    """Validate a registration; return the target's parts, the kind decided and the normalized requirements.

    ``kind="auto"`` is MindSpeed's rule: a replacement whose name (a lazy reference's last name too)
    ends in ``wrapper`` or ``decorator`` wraps, anything else replaces.

    Raises:
        PatchValidationError: malformed target, unknown kind, a wrap that is not callable, a
            non-callable replacement for a callable target, or a malformed requirement.
    """
    parts = parse_target(target)
    if kind not in KINDS:
        raise PatchValidationError(f"kind {kind!r} for {target!r} is unknown: use one of "
                                   f"{', '.join(map(repr, KINDS))}", target=target)
    lazy = is_reference(new_func)
    if kind == "auto":
        if lazy:
            name = new_func.rpartition(":")[2].rpartition(".")[2]
        else:
            name = getattr(new_func, "__name__", "") if new_func is not None else ""
        kind = "wrap" if isinstance(name, str) and name.endswith(("wrapper", "decorator")) else "replace"
    if kind == "wrap" and not callable(new_func):
        raise PatchValidationError(f"a wrap for {target!r} must be a callable decorator wrapper(fn) -> fn, "
                                   f"got {new_func!r}", target=target)
    if new_func is not None and not lazy and not callable(new_func) and \
            not isinstance(new_func, (ModuleType, property)):
        _check_non_callable(target, parts, new_func)
    return parts, kind, normalize_requires(requires, target=target)


def _check_non_callable(target: str, parts: tuple[str, ...], new_func: Any) -> None:
    try:
        located = locate(target, parts)
    except AdaptationError:
        return
    if located.waiting_for is None and located.exists and callable(located.raw):
        raise PatchValidationError(f"{target!r} is callable but the replacement {new_func!r} is not",
                                   target=target)
