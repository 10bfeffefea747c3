"""Errors of :mod:`mindspeed_ms.ops`: an op got an argument it cannot take (raised before any kernel runs).

Re-exported from :mod:`mindspeed_ms.errors`.
"""

from __future__ import annotations

from mindspeed_ms.engine.errors import AdaptationError

__all__ = ["OpError", "OpArgumentError", "OpDTypeError", "OpUnavailableError"]


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


class OpUnavailableError(OpError, NotImplementedError):
    """A fused op this backend has no implementation of; ``argument`` names the training flag to drop."""
