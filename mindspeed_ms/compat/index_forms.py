"""Index forms PyTorch accepts in ``x[index]`` that MindSpore's ``Tensor.__getitem__`` refuses or misreads.

Measured on MindSpore 2.7.1 + MSAdapter 0.5.0b1 against torch 2.13 (tests/conformance/cases/ops_index_forms.py):

- an empty list, alone or inside a tuple (``x[[]]``, ``x[:, []]``), raises IndexError ("the list can't be empty");
  PyTorch selects nothing (an empty int64 index tensor, which MindSpore accepts);
- a ``torch.uint8`` mask raises IndexError; PyTorch reads it as a bool mask (with a deprecation warning);
- a scalar boolean index (``False``, ``torch.tensor(False)``, ``torch.tensor(True)``): PyTorch inserts a new
  dimension of size 1 (True) or 0 (False) where it stands. MindSpore raises for a Python False, fails in its
  NonZero kernel for a 0-d True tensor, and **silently returns other values** for a 0-d False tensor in a tuple
  (``x[..., torch.tensor(False)]`` gave a (2, 3) tensor of zeros for a (2, 3, 4) ``x``; PyTorch: (2, 3, 4, 0)).

Each is rewritten into a form MindSpore computes as PyTorch does: the empty list into an empty int64 tensor, the
uint8 mask into a bool mask, a scalar boolean as PyTorch reads it: a new dimension of size 1 where it stands (the
tensor viewed with it), indexed by an int64 tensor ``[0]`` for True and ``[]`` for False, an advanced index
broadcast with the others. Indices made only of ints, slices, ``None`` and ``...`` go straight through, with one
type test per item.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

import numpy as np

__all__ = ["getitem_forms_wrapper", "normalized_index"]

#: index items MindSpore reads as PyTorch does (``type(True)`` is bool, not int: booleans are not among them)
_BASIC = frozenset((int, slice, type(None), type(Ellipsis)))
#: PyTorch's warning for a uint8 mask (its text, so that a filter written for PyTorch matches)
UINT8_MASK_WARNING = "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."


def _scalar_bool(item: Any, bool_dtypes: tuple[Any, ...]) -> bool | None:
    """``item``'s value when it is a scalar boolean index (Python bool, 0-d bool or uint8 tensor), else None."""
    if type(item) is bool:
        return item
    if getattr(item, "dtype", None) in bool_dtypes and tuple(item.shape) == ():
        return bool(item.item())
    return None


def _consumed(item: Any, bool_dtype: Any) -> int | None:
    """How many of the indexed tensor's dimensions ``item`` consumes (None for ``...``)."""
    if item is None:
        return 0
    if item is Ellipsis:
        return None
    if getattr(item, "dtype", None) == bool_dtype:
        return len(item.shape)  # a mask consumes as many dimensions as it has
    return 1


def normalized_index(index: Any, shape: tuple[int, ...]) -> tuple[tuple[int, ...] | None, Any] | None:
    """Return ``(shape to view the tensor as first, or None; index MindSpore reads as PyTorch does)``, or None when
    ``index`` needs no rewriting.

    A scalar boolean is what PyTorch makes of it: a new dimension of size 1 where it stands, indexed by an int64
    tensor ``[0]`` (True) or ``[]`` (False), an advanced index like the others.
    """
    import mindspore

    items = list(index) if type(index) is tuple else [index]
    changed, scalars = False, {}
    for position, item in enumerate(items):
        if type(item) in _BASIC:
            continue
        value = _scalar_bool(item, (mindspore.bool_, mindspore.uint8))
        if value is not None:
            scalars[position] = value
            changed = True
        elif type(item) is list and not item:
            items[position] = mindspore.Tensor(np.empty((0,), np.int64))
            changed = True
        elif getattr(item, "dtype", None) == mindspore.uint8:
            warnings.warn(UINT8_MASK_WARNING, UserWarning, stacklevel=3)
            items[position] = item.astype(mindspore.bool_)
            changed = True
    if not changed:
        return None
    view = None
    if scalars:
        counts = [0 if position in scalars else _consumed(item, mindspore.bool_) for position, item in enumerate(items)]
        rest = len(shape) - sum(count for count in counts if count)
        view, dim = list(shape), 0
        for position, count in enumerate(counts):
            if position in scalars:
                view.insert(dim, 1)
                items[position] = mindspore.Tensor(np.zeros((1 if scalars[position] else 0,), np.int64))
                dim += 1
            else:
                dim += rest if count is None else count
    rewritten = tuple(items) if type(index) is tuple or len(items) > 1 else items[0]
    return (None if view is None else tuple(view)), rewritten


def getitem_forms_wrapper(getitem: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.__getitem__`` reading the index forms of the module docstring as PyTorch does."""

    @functools.wraps(getitem)
    def getitem_as_torch(self: Any, index: Any) -> Any:
        kind = type(index)
        if kind in _BASIC:
            return getitem(self, index)
        if kind is tuple:
            for item in index:
                if type(item) not in _BASIC:
                    break
            else:
                return getitem(self, index)
        rewritten = normalized_index(index, tuple(self.shape))
        if rewritten is None:
            return getitem(self, index)
        view, index = rewritten
        return getitem(self if view is None else self.reshape(view), index)

    return getitem_as_torch
