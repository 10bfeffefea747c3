"""The exception hierarchy of mindspeed_ms.

Every error derives from :class:`AdaptationError` and, where one fits, from the builtin a caller
would naturally catch (``LookupError`` for a missing target, ``ValueError`` for a malformed
registration, ``TypeError`` for an incompatible signature). Each carries the dotted ``target``
it is about (``None`` when it is about no single target).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "AdaptationError",
    "ScriptSyntaxError",
    "LaunchScriptError",
    "PatchValidationError",
    "TargetNotFoundError",
    "PatchConflictError",
    "SignatureMismatchError",
    "PatchApplyError",
    "ProviderError",
    "FrameworkError",
    "BackendImportError",
    "BackendNotInstalledError",
    "OpError",
    "OpArgumentError",
    "OpDTypeError",
    "FeatureTableError",
]


class AdaptationError(Exception):
    """Base class of every error raised by mindspeed_ms."""

    def __init__(self, message: str, *, target: str | None = None) -> None:
        super().__init__(message)
        self.target = target


class PatchValidationError(AdaptationError, ValueError):
    """A registration is malformed: bad target path, kind, replacement or requirement."""


class TargetNotFoundError(AdaptationError, LookupError):
    """A target path does not resolve to an existing module or attribute.

    Attributes:
        resolved: the longest prefix of the target that did resolve (``""`` when none).
        missing: the first part of the path that could not be found.
        suggestions: close matches for ``missing`` among the names that exist there.
    """

    def __init__(
        self,
        message: str,
        *,
        target: str | None = None,
        resolved: str = "",
        missing: str = "",
        suggestions: Sequence[str] = (),
    ) -> None:
        super().__init__(message, target=target)
        self.resolved = resolved
        self.missing = missing
        self.suggestions = tuple(suggestions)


class PatchConflictError(AdaptationError):
    """Two registrations want to install different replacements for the same target."""

    def __init__(self, message: str, *, target: str | None = None, sites: Sequence[str] = ()) -> None:
        super().__init__(message, target=target)
        self.sites = tuple(sites)


class SignatureMismatchError(AdaptationError, TypeError):
    """A replacement cannot accept every call the original accepts (raised in strict mode)."""

    def __init__(self, message: str, *, target: str | None = None, problems: Sequence[str] = ()) -> None:
        super().__init__(message, target=target)
        self.problems = tuple(problems)


class PatchApplyError(AdaptationError):
    """Applying a batch of patches failed; everything the batch changed has been undone.

    The failing target is in ``.target``; the original exception is chained as ``__cause__``.
    """


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


class OpError(AdaptationError):
    """A :mod:`mindspeed_ms.ops` function got an argument it cannot take (raised before any kernel runs).

    Attributes:
        op: the op's public name.
        argument: the name of the offending argument.
    """

    def __init__(self, op: str, argument: str, message: str) -> None:
        super().__init__(f"{op}: argument {argument!r}: {message}")
        self.op = op
        self.argument = argument


class OpArgumentError(OpError, ValueError):
    """An op argument has the wrong shape or value."""


class OpDTypeError(OpError, TypeError):
    """An op argument has the wrong type or dtype."""


class LaunchScriptError(AdaptationError, ValueError):
    """A launch script cannot be read or converted (``mindspeed-ms convert-launch``)."""


class ScriptSyntaxError(LaunchScriptError):
    """A launch script does not parse; ``line`` and ``column`` (1-based) point at the first error."""

    def __init__(self, message: str, *, line: int, column: int) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class FeatureTableError(AdaptationError, ValueError):
    """The feature table of ``convert-launch`` (``migrate/features.json``) is malformed.

    Attributes:
        path: the table file that was read.
        row: the index of the offending row in ``rows`` (``None`` when the problem is not in one row).
    """

    def __init__(self, message: str, *, path: str, row: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.row = row
