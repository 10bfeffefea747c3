"""``torch.split`` of large float32 tensors that record a gradient, with its backward on the host (MindSpore's CPU).

Megatron's attention splits the fused QKV projection's output ``[sq, b, groups, (heads/groups + 2) * head_dim]``
into query, key and value with ``torch.split(mixed_qkv, sizes, dim=3)``. MindSpore's split returns strided views
whose gradient is one ``StridedSliceGrad`` per piece (a zero tensor of the whole input's size with the piece's
gradient written in) and the autograd engine then adds the three full-size tensors: at the mid size (hidden 512,
sequence 128, micro batch 4) ~18 ms for one piece and ~25 ms for the three, per layer, where PyTorch's ``cat``
of the pieces takes ~1 ms.

Here the split is an autograd Function: the forward copies each piece out of the input's host memory into a
tensor of MindSpore's memory (:mod:`.host_outputs`), the backward writes each piece's gradient into its place in
one new tensor of the input's shape (zeros for a piece that has none), as PyTorch's backward (a ``cat``) does.
The values are the same bits.

Taken only where PyTorch's pieces could not be written in place anyway: the input requires a gradient and
gradients are being recorded (PyTorch refuses in-place writes to the outputs of a function that returns several
views: "This view is the output of a function that returns multiple views"), float32, at least
:data:`MIN_ELEMENTS` elements, ``split_size_or_sections`` an int or a sequence of ints, ``dim`` an int. The pieces
are copies, not views, marked (:mod:`.slice_copies`): an in-place write into a piece raises as PyTorch's does,
and so does a write into the *input* while a piece is alive (PyTorch's pieces would see it, and their next use
would raise). Everything else goes to MindSpore's split.

Each piece remembers where it came from (:func:`piece_of`): :mod:`.host_attention` takes megatron's query, key
and value straight from the split's input when they are its three pieces, unchanged, and then writes their
gradients into one tensor of the input's shape itself (the split's backward is not run).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_arithmetic import scatter_pieces, split_pieces
from mindspeed_ms.compat.slice_copies import mark

__all__ = ["MIN_ELEMENTS", "piece_of", "split_wrapper"]

#: the attribute of a taken split's pieces: ``(input, sizes, dim, index, version)``, the piece's version counter
#: as the split returned it
_PIECE = "_mindspeed_ms_split_piece"

#: below this many elements of the input MindSpore's split may be as fast as the host round trip (not measured); at
#: the tiny size's 24,576-element QKV output the host split is faster: one Function where MindSpore's split is a view
#: op, a StridedSliceGrad per piece and the engine's adds (PyNative's ~250 us per op; 2.6 vs 6.0 ms for the split,
#: a small use of the pieces and the backward, minima of 40 interleaved runs on a loaded machine)
MIN_ELEMENTS = 4096


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    from mindspeed_ms.compat.host_memory import host_array
    from mindspeed_ms.compat.host_outputs import new_float32

    class HostSplit(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """The pieces of ``input`` along ``dim`` as new tensors; the backward places their gradients."""

        @staticmethod
        def forward(ctx: Any, input: Any, sizes: tuple[int, ...], dim: int) -> Any:
            shape = tuple(input._shape)
            results, memories = [], []
            for size in sizes:
                piece = (*shape[:dim], size, *shape[dim + 1:])
                result, memory = new_float32(piece)
                results.append(result)
                memories.append(memory)
            split_pieces(host_array(input), dim, memories)
            ctx.saved = (shape, sizes, dim)
            return tuple(results)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            shape, sizes, dim = ctx.saved
            result, memory = new_float32(shape)
            scatter_pieces([None if grad is None else host_array(grad) for grad in grads], sizes, dim, memory)
            return result, None, None

    return HostSplit


@functools.lru_cache(maxsize=1)
def _checks() -> tuple[Any, Callable[[], bool]]:
    import mindspore
    import msadapter

    return mindspore.float32, msadapter.is_grad_enabled


def _sizes(length: int, split: Any) -> tuple[int, ...] | None:
    """The pieces' sizes along the split dimension (PyTorch's rule), or None when not taken."""
    if isinstance(split, int) and not isinstance(split, bool):
        if split <= 0:
            return None
        return tuple(min(split, length - start) for start in range(0, length, split)) or None
    if not isinstance(split, Sequence) or not split:
        return None
    for n in split:  # a loop, not a generator expression: a frame fewer, resumed per piece, every step
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            return None
    return tuple(split) if sum(split) == length else None


def _taken(tensor: Any, split: Any, dim: Any) -> tuple[tuple[int, ...], int] | None:
    """``(sizes, dim)`` when this split is taken, else None."""
    shape = getattr(tensor, "_shape", None)
    float32, grad_enabled = _checks()
    if (shape is None or tensor.dtype is not float32 or not tensor.requires_grad or math.prod(shape) < MIN_ELEMENTS
            or not isinstance(dim, int) or isinstance(dim, bool) or not -len(shape) <= dim < len(shape)
            or not grad_enabled()):
        return None
    dim %= len(shape)
    sizes = _sizes(shape[dim], split)
    return None if sizes is None or len(sizes) < 2 else (sizes, dim)


def split_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.split(tensor, split_size_or_sections, dim=0)`` / ``Tensor.split(split_size, dim=0)``."""

    @functools.wraps(op)
    def split(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and len(kwargs) == 1 and "dim" in kwargs:  # megatron's split(x, sizes, dim=d)
            split_size, dim = args[0], kwargs["dim"]
        else:
            names = ("split_size_or_sections", "dim")
            given = dict(zip(names, args))
            if (len(args) > 2 or set(kwargs) - {*names, "split_size"} or set(given) & set(kwargs)
                    or {"split_size", "split_size_or_sections"} <= {*given, *kwargs}):
                return op(tensor, *args, **kwargs)
            given.update(kwargs)
            split_size, dim = given.get("split_size_or_sections", given.get("split_size")), given.get("dim", 0)
        taken = _taken(tensor, split_size, dim)
        if taken is None:
            return op(tensor, *args, **kwargs)
        pieces = _function().apply(tensor, *taken)
        for index, piece in enumerate(pieces):
            setattr(piece, _PIECE, (tensor, *taken, index, piece._version))
        mark("torch.split()", tensor, pieces)
        return pieces

    return split


def piece_of(tensor: Any) -> tuple[Any, Any, tuple[int, ...], int, int] | None:
    """``(piece, input, sizes, dim, index)`` when ``tensor`` is piece ``index`` of a taken split of ``input`` (or
    a view of that piece with its shape, strides and address: megatron's ``query.reshape`` to the same shape), not
    written in place since (its version counter, which a view shares, unchanged); else None."""
    piece = tensor
    found = getattr(piece, _PIECE, None)
    if found is None:
        piece = getattr(tensor, "_base", None)
        found = None if piece is None else getattr(piece, _PIECE, None)
        if found is None or not _same_layout(tensor, piece):
            return None
    source, sizes, dim, index, version = found
    if tensor._version != version:
        return None
    return piece, source, sizes, dim, index


def _same_layout(view: Any, base: Any) -> bool:
    from mindspeed_ms.compat.host_memory import tensor_reads

    address, stride = tensor_reads()
    return (tuple(view._shape) == tuple(base._shape) and address(view) == address(base)
            and tuple(stride(view)) == tuple(stride(base)))
