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
format").

``memory_format=`` on ``contiguous``, ``is_contiguous``, ``to`` and the dtype casts (``float``, ``half``, ...) raised
TypeError (an unknown argument); they take it now (:func:`contiguous_wrapper`, :func:`is_contiguous_wrapper`,
:func:`to_format_wrapper`, :func:`cast_format_wrapper`). ``is_contiguous(memory_format=torch.channels_last)`` reads
the strides as PyTorch does (True for a 4-d tensor whose channels are innermost, or whose non-batch sizes are 1).
The wrappers cost one Python frame a call and touch nothing else when the argument is left out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.errors import MemoryFormatUnsupportedError

__all__ = ["MemoryFormat", "FORMATS", "like_wrapper", "empty_wrapper", "wants_contiguous", "contiguous_format_checked",
           "contiguous_wrapper", "is_contiguous_wrapper", "to_format_wrapper", "cast_format_wrapper"]


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

#: (torch attribute, this module's attribute holding it): ``legacy_contiguous_format`` is ``contiguous_format`` in
#: PyTorch too
FORMATS: tuple[tuple[str, str], ...] = (
    ("memory_format", "MemoryFormat"),
    ("contiguous_format", "contiguous_format"),
    ("legacy_contiguous_format", "contiguous_format"),
    ("preserve_format", "preserve_format"),
    ("channels_last", "channels_last"),
    ("channels_last_3d", "channels_last_3d"),
)
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


def contiguous_format_checked(tensor: Any, *args: Any, **kwargs: Any) -> None:
    """Check ``tensor.contiguous(memory_format=...)``'s argument as PyTorch: keyword only, a
    ``torch.memory_format``, not ``preserve_format``; a channels-last layout is refused (rank error or loud)."""
    if args:
        raise TypeError(f"contiguous() takes 0 positional arguments but {len(args)} was given")
    unknown = set(kwargs) - {"memory_format"}
    if unknown:
        raise TypeError(f"contiguous() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    memory_format = _checked("contiguous", kwargs.get("memory_format", contiguous_format), allow_none=False)
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    _refuse_channels_last("contiguous", memory_format, len(tensor.shape))


_CHANNELS_LAST_ORDER = {channels_last: (1, 3, 2, 0), channels_last_3d: (1, 4, 3, 2, 0)}


def contiguous_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.contiguous(memory_format=torch.contiguous_format)``: MSAdapter's takes no argument."""

    @functools.wraps(op)
    def contiguous(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            contiguous_format_checked(self, *args, **kwargs)
        return op(self)

    return contiguous


def _channels_last_strides(tensor: Any, memory_format: Any) -> bool:
    """PyTorch's ``is_contiguous(memory_format=channels_last[_3d])``: the strides, read channels innermost; a dim of
    size 1 may have any stride; a tensor of another rank is not."""
    order = _CHANNELS_LAST_ORDER[memory_format]
    shape = tuple(tensor.shape)
    if len(shape) != len(order):
        return False
    strides = tuple(tensor.stride())
    expected = 1
    for dim in order:
        if shape[dim] != 1:
            if strides[dim] != expected:
                return False
            expected *= shape[dim]
    return True


def is_contiguous_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.is_contiguous(memory_format=torch.contiguous_format)``: MSAdapter's takes no argument."""

    @functools.wraps(op)
    def is_contiguous(self: Any, memory_format: Any = contiguous_format) -> bool:
        if memory_format is contiguous_format:
            return op(self)
        memory_format = _checked("is_contiguous", memory_format, allow_none=False)
        if memory_format is preserve_format:
            return op(self)  # PyTorch answers the default layout's question
        return _channels_last_strides(self, memory_format)

    return is_contiguous


def to_format_wrapper(to: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.to(..., memory_format=...)``: checked, channels-last refused, then ``to`` without it (PyTorch
    returns the tensor itself when nothing else changes, whatever the format; a converted copy is row-major here)."""

    @functools.wraps(to)
    def to_with_format(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "memory_format" in kwargs:
            kwargs = dict(kwargs)
            wants_contiguous("to", kwargs.pop("memory_format"), len(self.shape))
        return to(self, *args, **kwargs)

    return to_with_format


def cast_format_wrapper(cast: Callable[..., Any]) -> Callable[..., Any]:
    """``x.float(memory_format=torch.preserve_format)`` and the other dtype casts: checked, channels-last refused."""

    @functools.wraps(cast)
    def cast_with_format(self: Any, memory_format: Any = None) -> Any:
        if memory_format is not None:
            wants_contiguous(cast.__name__.lstrip("_"), memory_format, len(self.shape))
        return cast(self)

    return cast_with_format
