"""Errors of the migration tools (``convert-launch``, the feature table).

Re-exported from :mod:`mindspeed_ms.errors`.
"""

from __future__ import annotations

from mindspeed_ms.engine.errors import AdaptationError

__all__ = ["LaunchScriptError", "ScriptSyntaxError", "FeatureTableError"]


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
