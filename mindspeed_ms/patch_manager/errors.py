"""Errors of :mod:`mindspeed_ms.patch_manager`: MindSpeed's manager API asked for what the engine cannot do.

Re-exported from :mod:`mindspeed_ms.errors`.
"""

from __future__ import annotations

from mindspeed_ms.engine.errors import AdaptationError

__all__ = ["WrapperNotFoundError", "AdoptionError"]


class AdoptionError(AdaptationError, RuntimeError):
    """MindSpeed's manager holds registrations that cannot be carried over to the engine.

    Attributes:
        targets: the targets concerned (applied by MindSpeed's manager already).
    """

    def __init__(self, message: str, *, targets: tuple[str, ...]) -> None:
        super().__init__(message, target=targets[0] if targets else None)
        self.targets = targets


class WrapperNotFoundError(AdaptationError, LookupError):
    """``remove_wrappers`` found nothing to remove (MindSpeed raised ``RuntimeError``; this is a ``LookupError``).

    Attributes:
        names: the wrapper names asked for.
        registered: the names of the wrappers registered for the target.
    """

    def __init__(self, message: str, *, target: str, names: tuple[str, ...], registered: tuple[str, ...]) -> None:
        super().__init__(message, target=target)
        self.names = names
        self.registered = registered
