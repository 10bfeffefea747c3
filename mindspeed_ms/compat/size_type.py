"""``torch.Size`` printed and combined as PyTorch's (MSAdapter's ``msadapter._C.size.Size``; cases in
tests/conformance/cases/fix_size_type.py).

Measured on MSAdapter 0.5.0b1 against torch 2.13: ``repr``/``str``/f-strings of a shape printed
``msadapter.Size([2, 3])`` (PyTorch: ``torch.Size([2, 3])``: logs, assertion messages and doctest-style checks differ),
and ``size + (4,)``, ``(1,) + size``, ``size * 2`` and ``2 * size`` gave plain tuples (PyTorch: ``torch.Size``, so
``.numel()`` on the result raised AttributeError). Construction is left as it is (every ``tensor.shape`` read builds
one: a Python frame there would cost every step); ``torch.Size(range(3))`` and NumPy integers are still refused with
MSAdapter's TypeError (PyTorch takes any iterable of integers).
"""

from __future__ import annotations

from typing import Any

__all__ = ["size_repr", "size_add", "size_radd", "size_mul"]


def size_repr(self: Any) -> str:
    """``torch.Size([2, 3])``, as PyTorch prints a shape (also ``str`` and f-strings: tuple's ``__str__`` is repr)."""
    return f"torch.Size({list(self)!r})"


def size_add(self: Any, other: Any) -> Any:
    """``size + tuple``: a ``torch.Size`` (PyTorch), a list still refused by tuple's own ``TypeError``."""
    if not isinstance(other, tuple):
        return NotImplemented
    return type(self)(tuple.__add__(self, other))


def size_radd(self: Any, other: Any) -> Any:
    """``tuple + size``: a ``torch.Size`` (PyTorch)."""
    if not isinstance(other, tuple):
        return NotImplemented
    return type(self)(tuple.__add__(other, self))


def size_mul(self: Any, times: Any) -> Any:
    """``size * n`` and ``n * size``: a ``torch.Size`` (PyTorch)."""
    result = tuple.__mul__(self, times)
    return result if result is NotImplemented else type(self)(result)
