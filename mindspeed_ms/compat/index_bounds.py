"""Index tensors outside the indexed dimension, refused as PyTorch refuses them (tests/conformance/cases/
ops_special_index.py against torch 2.13).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1: ``gather`` and ``scatter``/``scatter_add`` with an index equal
to the size or negative return normally (silently: gather(x, 1, [[4], [-1]]) gave 0.0 and the row's last element),
``index_select`` wraps a negative index, ``index_add_`` wraps a negative index and refuses one equal to the size
with IndexError (PyTorch: RuntimeError); ``t[index] = v`` with an empty index tensor raises ValueError (PyTorch:
writes nothing) and with an index equal to the size ValueError (PyTorch: IndexError); ``torch.where(condition)``
of an all-False 1-d condition gives two (0, 1) tensors (PyTorch: one of shape (0,)). Each check reads the index
tensor on the host (its min and max), before the kernel runs (nothing is written when it raises).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.errors import IndexBoundsError, IndexOutOfRangeError

__all__ = ["index_bounds_wrapper", "empty_index_setitem_wrapper", "where_wrapper"]


def _check(op: str, input: Any, dim: Any, index: Any, negative: bool = False) -> None:
    """Raise PyTorch's class when ``index`` holds a value outside ``[0, input.shape[dim])`` (``[-size, size)`` with
    ``negative``): :class:`IndexOutOfRangeError` (an IndexError) for index_select and indexing,
    :class:`IndexBoundsError` (a RuntimeError) for the others."""
    shape = tuple(input.shape)
    if not hasattr(index, "shape") or 0 in tuple(index.shape) or not shape:
        return
    size = int(shape[dim % len(shape)]) if isinstance(dim, int) and -len(shape) <= dim < len(shape) else None
    if size is None:
        return
    values = index.asnumpy()  # index tensors are small: one host read, no kernels
    low, high = values.min(), values.max()
    if low < (-size if negative else 0) or high >= size:
        bad = int(low if low < (-size if negative else 0) else high)
        raise (IndexOutOfRangeError if op in ("index_select", "__setitem__") else IndexBoundsError)(op, bad, dim, size)


def index_bounds_wrapper(op_name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Check the index of ``op(input, dim, index, ...)`` (``torch.gather``/``index_select``/``scatter*`` and the
    Tensor methods, ``self`` first) before calling ``op``."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def checked(input: Any, *args: Any, **kwargs: Any) -> Any:
            dim = args[0] if args else kwargs.get("dim")
            index = args[1] if len(args) > 1 else kwargs.get("index")
            _check(op_name, input, dim, index)
            return op(input, *args, **kwargs)

        return checked

    return wrapper


def empty_index_setitem_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``t[index] = v``: an empty int64 index tensor writes nothing (PyTorch; MindSpore raises ValueError), and an
    index tensor outside the first dimension raises IndexError (MindSpore: ValueError)."""
    import mindspore

    integers = (mindspore.int64, mindspore.int32)

    @functools.wraps(op)
    def setitem(self: Any, key: Any, value: Any) -> Any:
        if getattr(key, "dtype", None) in integers and hasattr(key, "shape"):
            if 0 in tuple(key.shape):
                return None
            _check("__setitem__", self, 0, key, negative=True)
        return op(self, key, value)

    return setitem


def where_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.where(condition)``: ``condition.nonzero(as_tuple=True)`` (PyTorch), one int64 tensor per dim."""

    @functools.wraps(op)
    def where(condition: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return op(condition, *args, **kwargs)
        from mindspeed_ms.compat.reductions import tensor_nonzero

        return tensor_nonzero(condition, as_tuple=True)

    return where
