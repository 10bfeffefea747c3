"""The engine's exception hierarchy.

Every error of mindspeed_ms derives from :class:`AdaptationError` and, where one fits, from the
builtin a caller would naturally catch (``LookupError`` for a missing target, ``ValueError`` for a
malformed registration, ``TypeError`` for an incompatible signature, ``ModuleNotFoundError`` for a
blocked import). Each carries the dotted ``target`` it is about (``None`` when it is about no
single target). Errors of the layers above (providers, framework, ops, migration tools) live next
to those layers and are all re-exported from :mod:`mindspeed_ms.errors`.
"""

from __future__ import annotations

# Not imported at run time: annotations are strings, and the PyTorch path imports this module (via the
# framework's errors) where every millisecond counts.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

__all__ = [
    "AdaptationError",
    "PatchValidationError",
    "TargetNotFoundError",
    "PatchConflictError",
    "SignatureMismatchError",
    "PatchApplyError",
    "BlockedModuleError",
    "SettingError",
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


class BlockedModuleError(AdaptationError, ModuleNotFoundError):
    """``import`` of a module that an applied registry blocks (a ``ModuleNotFoundError``).

    ``importlib.util.find_spec`` of a blocked module returns ``None`` instead (a probe such as
    "is apex installed?" then reads "no"); only an actual import raises this.

    Attributes:
        name: the blocked module, as on :class:`ImportError`.
        owners: the registries that block it.
    """

    def __init__(self, message: str, *, name: str, owners: Sequence[str] = ()) -> None:
        super().__init__(message, target=name)
        self.name = name
        self.owners = tuple(owners)


class SettingError(AdaptationError, ValueError):
    """An environment variable of mindspeed_ms holds a value that cannot be used (a ``ValueError``).

    Every ``MINDSPEED_MS_*`` switch rejects a malformed value with this error (or a subclass) instead
    of silently reading it as its default.

    Attributes:
        variable: the environment variable.
        value: its value, as found.
        expected: what it may be set to.
    """

    def __init__(self, variable: str, value: str, expected: str) -> None:
        self.variable = variable
        self.value = value
        self.expected = expected
        super().__init__(f"{variable}={value!r} is not {expected}; set it to {expected} or unset it")
