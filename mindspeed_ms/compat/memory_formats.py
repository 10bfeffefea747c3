"""``torch.memory_format`` and the ``memory_format=`` arguments as PyTorch has them.

Measured on MSAdapter 0.5.0b1 against torch 2.13 (tests/conformance/cases/fix_memory_formats.py):

- ``torch.contiguous_format``, ``torch.preserve_format`` and ``torch.legacy_contiguous_format`` were all ``None``
  (``torch.contiguous_format == torch.preserve_format`` was True, so no code could tell them apart), and
  ``torch.channels_last`` / ``channels_last_3d`` / ``torch.memory_format`` did not exist (AttributeError).
- ``torch.empty(..., memory_format=...)`` raised TypeError; ``x.clone(memory_format=torch.contiguous_format)`` kept
  a transposed input's strides (PyTorch: a contiguous copy); ``zeros_like``/``ones_like``/``empty_like``/
  ``full_like``/``rand_like``/``randn_like`` ignored any format.

Here the formats are four distinct objects of a class named ``torch.memory_format`` (``repr`` and pickling by name:
a pickle of one loads on PyTorch as its own), and ``clone``, ``empty`` and the ``*_like`` factories take them.
Channels-last layouts cannot be made: MSAdapter's tensors are laid out row-major, so asking for one (of a tensor of
the rank it applies to) raises :class:`~mindspeed_ms.errors.MemoryFormatUnsupportedError` instead of returning a
row-major tensor; the wrong rank raises PyTorch's RuntimeError ("required rank 4 tensor to use channels_last
format"). Left as MSAdapter has them (loud: TypeError for the unknown argument, none in the field's code):
``memory_format=`` on ``contiguous``, ``is_contiguous``, ``to`` and the dtype casts, which are on every training
step's path, where a wrapper would cost every call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.errors import MemoryFormatUnsupportedError

__all__ = ["MemoryFormat", "FORMATS", "like_wrapper", "empty_wrapper", "wants_contiguous"]


class MemoryFormat:
    """One of PyTorch's memory formats; compared by identity, named ``torch.<name>``."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # pickled as the global ``torch.<name>``: PyTorch loads it as its own


MemoryFormat.__name__ = MemoryFormat.__qualname__ = "memory_format"
MemoryFormat.__module__ = "torch"

contiguous_format = MemoryFormat("contiguous_format")
preserve_format = MemoryFormat("preserve_format")
channels_last = MemoryFormat("channels_last")
channels_last_3d = MemoryFormat("channels_last_3d")

#: torch attribute -> value (``legacy_contiguous_format`` is ``contiguous_format`` in PyTorch too)
FORMATS: dict[str, Any] = {
    "memory_format": MemoryFormat,
    "contiguous_format": contiguous_format,
    "legacy_contiguous_format": contiguous_format,
    "preserve_format": preserve_format,
    "channels_last": channels_last,
    "channels_last_3d": channels_last_3d,
}
_RANKS = {channels_last: 4, channels_last_3d: 5}


def _checked(op: str, memory_format: Any, *, allow_none: bool = True) -> Any:
    """``memory_format`` itself after PyTorch's type check (MSAdapter's own code passes None: its formats were None)."""
    if memory_format is None and allow_none:
        return preserve_format
    if not isinstance(memory_format, MemoryFormat):
        raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(memory_format).__name__}")
    return memory_format


def _refuse_channels_last(op: str, memory_format: Any, ndim: int) -> None:
    rank = _RANKS.get(memory_format)
    if rank is None:
        return
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {memory_format._name} format")
    raise MemoryFormatUnsupportedError(
        f"{op}(memory_format={memory_format!r}): MSAdapter's tensors are always row-major on the MindSpore backend, "
        f"a {memory_format._name} layout cannot be made; leave memory_format out (the values are the same, only the "
        f"strides differ)", target=op)


def wants_contiguous(op: str, memory_format: Any, ndim: int) -> bool:
    """Whether a copy must come out contiguous (``contiguous_format``) rather than keep its input's strides."""
    memory_format = _checked(op, memory_format)
    _refuse_channels_last(op, memory_format, ndim)
    return memory_format is contiguous_format


def like_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.zeros_like(input, ..., memory_format=torch.preserve_format)`` and the other ``*_like`` factories:
    a channels-last format is refused instead of ignored; the others give MSAdapter's row-major result."""

    @functools.wraps(op)
    def like(input: Any, *args: Any, memory_format: Any = preserve_format, **kwargs: Any) -> Any:
        wants_contiguous(op.__name__, memory_format, len(input.shape))
        return op(input, *args, **kwargs)

    return like


def empty_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.empty(*size, memory_format=torch.contiguous_format, ...)``."""

    @functools.wraps(op)
    def empty(*args: Any, memory_format: Any = contiguous_format, **kwargs: Any) -> Any:
        if memory_format is None:  # MSAdapter's own callers: its formats were None
            memory_format = contiguous_format
        memory_format = _checked("empty", memory_format)
        if memory_format is preserve_format:
            raise RuntimeError("unsupported memory format Preserve")
        result = op(*args, **kwargs)
        _refuse_channels_last("empty", memory_format, len(result.shape))
        return result

    return empty
