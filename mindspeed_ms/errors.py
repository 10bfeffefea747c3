"""Every error mindspeed_ms raises, in one place.

Every error derives from :class:`AdaptationError` and, where one fits, from the builtin a caller
would naturally catch (``LookupError`` for a missing target, ``ValueError`` for a malformed
registration, ``TypeError`` for an incompatible signature). Each carries the dotted ``target``
it is about (``None`` when it is about no single target).

The engine's errors are defined in :mod:`mindspeed_ms.engine.errors`, the ops' in
:mod:`mindspeed_ms.ops.errors` (loaded on first use: that package needs MindSpore) and the
migration tools' in :mod:`mindspeed_ms.migrate.errors`; the adaptation layer's (providers,
framework switch, backend) are defined here. All are importable from this module.
"""

from __future__ import annotations

from mindspeed_ms.engine.errors import (
    AdaptationError,
    BlockedModuleError,
    PatchApplyError,
    PatchConflictError,
    PatchValidationError,
    SignatureMismatchError,
    TargetNotFoundError,
)
from mindspeed_ms.migrate.errors import FeatureTableError, LaunchScriptError, ScriptSyntaxError

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from mindspeed_ms.ops.errors import OpArgumentError, OpDTypeError, OpError

__all__ = [
    "AdaptationError",
    "ScriptSyntaxError",
    "LaunchScriptError",
    "PatchValidationError",
    "TargetNotFoundError",
    "PatchConflictError",
    "SignatureMismatchError",
    "PatchApplyError",
    "BlockedModuleError",
    "ProviderError",
    "FrameworkError",
    "BackendImportError",
    "BackendNotInstalledError",
    "OpError",
    "OpArgumentError",
    "OpDTypeError",
    "FeatureTableError",
]

_OP_ERRORS = frozenset({"OpError", "OpArgumentError", "OpDTypeError"})


def __getattr__(name: str) -> object:
    # The ops' errors live in mindspeed_ms.ops, whose package imports MindSpore: load it only when asked.
    if name in _OP_ERRORS:
        from mindspeed_ms.ops import errors

        value = getattr(errors, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ProviderError(AdaptationError):
    """A patch provider failed while registering; its registrations were withdrawn.

    Attributes:
        provider: the name of the provider that failed.
    """

    def __init__(self, message: str, *, provider: str, target: str | None = None) -> None:
        super().__init__(message, target=target)
        self.provider = provider


class FrameworkError(AdaptationError, ValueError):
    """The requested AI framework is not one mindspeed_ms knows."""


class BackendImportError(AdaptationError, ImportError):
    """The MindSpore backend cannot be set up: e.g. a real torch was imported before the adaptor.

    ``.name`` is the module concerned, as on :class:`ImportError`.
    """

    def __init__(self, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


class BackendNotInstalledError(BackendImportError, ModuleNotFoundError):
    """A package the MindSpore backend needs (MSAdapter, MindSpore) is not installed; the message says how."""
