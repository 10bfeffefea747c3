"""Pieces that PyTorch returns as views and this backend returns as copies: in-place writes that cannot be exact
are refused loudly.

Two replacements return copies where PyTorch returns views of the input:

* ``y[i]``, ``y[a:b]``, ``split``, ``chunk``, ``narrow``, ``unbind``, ``expand`` of a bfloat16 tensor that autograd
  records (:func:`.bfloat16.grad_in_float32_wrapper`): MindSpore's StridedSliceGrad has no bfloat16 CPU kernel, so the
  piece is selected from a float32 copy and cast back;
* ``torch.split`` of a large float32 tensor that autograd records (:mod:`.host_split`): the pieces are copied out of
  the input's host memory.

Reading such a piece is exact (the same values and gradients). Writing is not: in PyTorch a write into the piece
reaches the input (a single view: through CopySlices, with its gradient; a piece of ``split``/``chunk``/``unbind``:
refused, "This view is the output of a function that returns multiple views"), and a write into the input is seen
through its views. Here the piece is marked (:func:`mark`), and :func:`refuse_write` (called by every in-place write
before it writes: :func:`.inplace.write_back`, ``copy_``, the bfloat16 ``__setitem__``) raises
:class:`~mindspeed_ms.compat.errors.InPlaceOnViewError` (a ``RuntimeError``, as PyTorch's refusal) for

* a write into a marked piece (a piece's own views are views of a tensor that autograd records: refused already), and
* a write into an input while a piece copied out of it is alive (PyTorch's view would see the write, ours would keep
  the old values and route its gradient past the write).

Nothing is written then. Two attribute reads per in-place write, a weak reference per piece.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.errors import InPlaceOnViewError

__all__ = ["COPY_OF", "LIVE_COPIES", "basic_index", "mark", "refuse_write"]

#: set on a piece: the op that made it (``"Tensor.__getitem__"``, ``"torch.split"``, ...)
COPY_OF = "_mindspeed_ms_copy_of"
#: set on the input: ``{id(piece): weak reference}`` of the pieces copied out of it that are alive
LIVE_COPIES = "_mindspeed_ms_live_copies"

_BASIC = (int, slice, type(None), type(Ellipsis))


def basic_index(index: Any) -> bool:
    """Tell whether ``tensor[index]`` is a view in PyTorch (ints, slices, None, Ellipsis; not a tensor, list or bool
    index, which PyTorch copies)."""
    if isinstance(index, tuple):
        return all(isinstance(item, _BASIC) and not isinstance(item, bool) for item in index)
    return isinstance(index, _BASIC) and not isinstance(index, bool)


def mark(op: str, base: Any, pieces: Any) -> None:
    """Mark ``pieces`` (a tensor, or a tuple/list of them) as copies that ``op`` made of views of ``base``."""
    items = pieces if isinstance(pieces, (tuple, list)) else (pieces,)
    live = getattr(base, LIVE_COPIES, None)
    if live is None:
        live = {}
        setattr(base, LIVE_COPIES, live)
    for piece in items:
        if hasattr(piece, "_shape"):
            setattr(piece, COPY_OF, op)
            # id -> a weak reference that removes its entry when the piece goes (O(1) a piece, no scan)
            live[id(piece)] = weakref.ref(piece, _forget(live, id(piece)))


def _forget(live: dict[int, Any], key: int) -> Callable[[Any], None]:
    def forget(_: Any) -> None:
        live.pop(key, None)

    return forget


def refuse_write(op: str, tensor: Any, call_site: Callable[[], str]) -> None:
    """Raise :class:`InPlaceOnViewError` when ``tensor`` is a marked piece, or an input with a live marked piece;
    ``call_site()`` names the caller (called only then: :func:`.inplace.call_site`)."""
    made_by = getattr(tensor, COPY_OF, None)
    if made_by is not None:
        if made_by.startswith(_MULTIPLE_VIEWS):
            raise InPlaceOnViewError(
                op, call_site(),
                f"this tensor is a piece of {made_by} of a tensor that requires grad: this view is the output of a "
                f"function that returns multiple views, which PyTorch does not allow to be modified inplace either; "
                f"replace the inplace operation by an out-of-place one")
        raise InPlaceOnViewError(
            op, call_site(),
            f"this tensor came from {made_by} of a tensor that requires grad, and on MindSpore's CPU backend it is a "
            f"copy, not a view ({_WHY}): the write would not reach the tensor it was taken from, as PyTorch's does "
            f"(or PyTorch refuses it: a piece of split/chunk/unbind); write into the whole tensor instead "
            f"(y[index] = value, or out of place: torch.cat / index_add), or take the piece in float32")
    live = getattr(tensor, LIVE_COPIES, None)
    if live:
        alive = [piece for piece in (ref() for ref in list(live.values())) if piece is not None]
        if alive:
            names = sorted({getattr(piece, COPY_OF, "?") for piece in alive})
            raise InPlaceOnViewError(
                op, call_site(),
                f"{len(alive)} piece(s) taken from this tensor by {', '.join(names)} are alive, and on MindSpore's CPU "
                f"backend they are copies, not views ({_WHY}): they would keep the old values and route their "
                f"gradients past this write; write before taking the pieces, or drop them first")


#: the ops whose pieces PyTorch refuses to write into (several views of one function)
_MULTIPLE_VIEWS = ("split", "chunk", "unbind", "torch.split")

_WHY = ("a bfloat16 slice is taken in float32 since StridedSliceGrad has no bfloat16 CPU kernel; a large float32 "
        "split is copied on the host for a faster backward")
