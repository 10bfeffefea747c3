"""Refusals of MindSpore re-raised as PyTorch's: :class:`OpRefusedError` and its builtin-class variants.

MindSpore (or MSAdapter) refuses some calls that PyTorch refuses too, but under another builtin class; the
replacements re-raise them under PyTorch's while keeping MindSpore's, so code that caught either still does.
Re-exported from :mod:`mindspeed_ms.compat.errors` and :mod:`mindspeed_ms.errors`; imports nothing heavy.
"""

from __future__ import annotations

from mindspeed_ms.engine.errors import AdaptationError

__all__ = [
    "OpRefusedError",
    "OpShapeRefusedError",
    "OpTypeRefusedError",
    "OpLookupRefusedError",
    "OpIndexRefusedError",
    "OpValueRefusedError",
    "OpOverflowRefusedError",
]


class OpRefusedError(AdaptationError, RuntimeError):
    """MindSpore refused a call that PyTorch refuses too, under another builtin class: re-raised as PyTorch's.

    The subclasses keep MindSpore's builtin class as well (code that caught it still does); the original error
    is the ``__cause__``.

    Attributes:
        op: the op, e.g. ``"Tensor.view"``.
        original: MindSpore's (or MSAdapter's) error.
    """

    def __init__(self, op: str, original: BaseException) -> None:
        text = str(original).split("\n\n----", 1)[0].strip() or type(original).__name__
        super().__init__(f"{op}: {text}", target=op)
        self.op, self.original = op, original


class OpShapeRefusedError(OpRefusedError, ValueError):
    """A refused shape or argument: PyTorch's RuntimeError, MindSpore's ValueError."""


class OpTypeRefusedError(OpRefusedError, TypeError):
    """A refused dtype or argument: PyTorch's RuntimeError, MindSpore's TypeError (no kernel for the dtype)."""


class OpLookupRefusedError(OpRefusedError, KeyError):
    """A refused argument: PyTorch's RuntimeError, MSAdapter's KeyError (e.g. an unknown device string)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class OpIndexRefusedError(OpRefusedError, IndexError, ValueError):
    """An index or dimension out of range: PyTorch's IndexError, MindSpore's ValueError or RuntimeError."""


class OpOverflowRefusedError(OpRefusedError, OverflowError):
    """A Python int outside the tensor's integer range: PyTorch's OverflowError, MindSpore's RuntimeError ("Unable
    to cast Python instance of type <class 'int'> to C++ type 'long'")."""


class OpValueRefusedError(OpRefusedError, ValueError, TypeError, KeyError):
    """A refused value: PyTorch's ValueError, MindSpore's TypeError or KeyError (e.g. a ragged nested list)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""
