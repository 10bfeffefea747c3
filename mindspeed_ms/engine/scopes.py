"""All-or-nothing registration blocks: what each open block changed first, to put back if it raises.

:meth:`~mindspeed_ms.engine.registry.PatchRegistry.provider` and
:meth:`~mindspeed_ms.engine.registry.PatchRegistry.transaction` open a scope; every registration,
block or unregistration made while scopes are open is remembered, once per target and scope, as it
was before (or as absent); a block that raises gets its targets back exactly.
"""

from __future__ import annotations

from typing import Any

from .patch_record import PatchRecord

__all__ = ["RegistrationScopes", "Scope"]

#: target -> its record and registration before the block changed it, or None when the block created it
Scope = dict[str, "tuple[PatchRecord, tuple[Any, ...]] | None"]


class RegistrationScopes:
    """The open scopes of one registry, innermost last.

    Not locked itself: the registry calls it under its own lock.
    """

    def __init__(self) -> None:
        self._open: list[Scope] = []

    def open(self) -> Scope:
        """Open a scope (nested in the open ones) and return it."""
        scope: Scope = {}
        self._open.append(scope)
        return scope

    def close(self, scope: Scope) -> None:
        """Stop remembering into ``scope`` (the outer scopes stay open)."""
        self._open[:] = [item for item in self._open if item is not scope]

    def remember(self, patch: PatchRecord, created: bool) -> None:
        """Remember ``patch`` as it is now (``created``: as absent) in every open scope that has not yet."""
        for scope in self._open:
            if patch.target not in scope:
                scope[patch.target] = None if created else (patch, patch.registration())

    @staticmethod
    def roll_back(scope: Scope, patches: dict[str, PatchRecord]) -> None:
        """Put every target ``scope`` remembered back into ``patches`` as it was before the scope."""
        for target, saved in scope.items():
            if saved is None:
                patches.pop(target, None)
            else:
                patch, registration = saved
                patch.restore_registration(registration)
                patches.setdefault(target, patch)
