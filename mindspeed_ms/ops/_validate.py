"""Argument checks shared by the ops: typed errors that name the op, the argument and what was expected.

Every check runs in Python before any kernel is launched: a failing kernel can leave MSAdapter's
autograd broken for the rest of the process (see ENVIRONMENT.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mindspore
from mindspore import Tensor

from mindspeed_ms.ops.errors import OpArgumentError, OpDTypeError

__all__ = [
    "OpArgumentError",
    "OpDTypeError",
    "FLOAT_DTYPES",
    "shape_of",
    "require_tensor",
    "require_float",
    "require_int_tensor",
    "require_ndim",
    "upcast",
    "is_half",
]

FLOAT_DTYPES = (mindspore.float16, mindspore.bfloat16, mindspore.float32)
INT_DTYPES = (mindspore.int32, mindspore.int64)


def shape_of(t: Tensor) -> tuple[int, ...]:
    """Return the shape as a plain tuple (works for MindSpore and MSAdapter tensors alike)."""
    return tuple(int(d) for d in t.shape)


def require_tensor(op: str, name: str, value: Any) -> Tensor:
    """Raise :class:`OpDTypeError` unless ``value`` is a MindSpore (or MSAdapter) tensor."""
    if not isinstance(value, Tensor):
        raise OpDTypeError(op, name, f"expected a MindSpore/MSAdapter Tensor, got {type(value).__name__}")
    return value


def require_float(op: str, name: str, value: Any, dtypes: Sequence[Any] = FLOAT_DTYPES) -> Tensor:
    """Raise unless ``value`` is a tensor of one of ``dtypes`` (float16, bfloat16, float32 by default)."""
    t = require_tensor(op, name, value)
    if t.dtype not in dtypes:
        names = ", ".join(str(d) for d in dtypes)
        raise OpDTypeError(op, name, f"expected dtype in ({names}), got {t.dtype}")
    return t


def require_int_tensor(op: str, name: str, value: Any) -> Tensor:
    """Raise unless ``value`` is an int32 or int64 tensor."""
    t = require_tensor(op, name, value)
    if t.dtype not in INT_DTYPES:
        raise OpDTypeError(op, name, f"expected dtype int32 or int64, got {t.dtype}")
    return t


def require_ndim(op: str, name: str, t: Tensor, ndims: Sequence[int], what: str | None = None) -> None:
    """Raise :class:`OpArgumentError` unless ``t`` has one of ``ndims`` dimensions."""
    if t.ndim not in ndims:
        expected = what or " or ".join(f"{n}-D" for n in ndims)
        raise OpArgumentError(op, name, f"expected {expected}, got shape {shape_of(t)}")


def is_half(t: Tensor) -> bool:
    """Return whether ``t`` is float16 or bfloat16."""
    return t.dtype in (mindspore.float16, mindspore.bfloat16)


def upcast(t: Tensor) -> Tensor:
    """Return ``t`` in float32 if it is float16/bfloat16 (the CPU backend lacks bfloat16 kernels)."""
    return t.astype(mindspore.float32) if is_half(t) else t
