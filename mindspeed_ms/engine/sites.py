"""Where a call came from: the one place that walks the caller's frames.

A registration records its site (``file:line``), shown by ``status()``, ``mindspeed-ms patches`` and
conflict errors. Functions that register on behalf of their caller say how far up the caller is, as
:func:`warnings.warn` takes ``stacklevel``; a facade whose depth varies (MindSpeed's manager API,
reached through subclass overrides and list methods) also names the frames to look through. The
engine itself knows no caller's module.
"""

from __future__ import annotations

import sys
from types import CodeType, FrameType
from typing import Callable

__all__ = ["caller_frame", "caller_site", "look_through"]

_transparent: set[CodeType] = set()


def look_through(code: CodeType) -> None:
    """Make every frame running ``code`` invisible to :func:`caller_frame` (a proxy's call-through, e.g. the
    counting shim ``MINDSPEED_MS_TRACE`` puts over a patched function, which registrations may pass through)."""
    _transparent.add(code)


def caller_frame(stacklevel: int = 1, *, skip: Callable[[FrameType], bool] | None = None) -> FrameType | None:
    """Return the frame ``stacklevel`` levels above the function calling this one, past frames ``skip`` rejects.

    Args:
        stacklevel: 1 is the caller of the function that calls :func:`caller_frame` (as
            :func:`warnings.warn` counts), 2 its caller, and so on.
        skip: frames for which it returns True are looked through (a facade's own frames); frames of code
            given to :func:`look_through` always are.

    Returns:
        The frame, or ``None`` when the stack is not that deep.
    """
    try:
        frame: FrameType | None = sys._getframe(stacklevel + 1)
    except ValueError:  # the stack is not that deep
        return None
    while frame is not None and (frame.f_code in _transparent or skip is not None and skip(frame)):
        frame = frame.f_back
    return frame


def caller_site(stacklevel: int = 1, *, skip: Callable[[FrameType], bool] | None = None) -> str:
    """Return ``file:line`` of :func:`caller_frame` (counted from the function calling this one), ``"?"`` if none."""
    frame = caller_frame(stacklevel + 1, skip=skip)
    if frame is None:
        return "?"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"
