"""torch functions and Tensor methods that MSAdapter lacks or gets wrong on MindSpore's CPU backend, composed of
ops that have CPU kernels (tests/conformance/cases/ops_shape.py, ops_index.py, ops_misc.py, ops_create.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13: ``x.flip(0)`` (an int for ``dims``)
fails in ReverseV2 (and the failure switched autograd off); ``repeat_interleave`` reads its arguments with
``args.get`` (AttributeError on every call); ``roll`` has no CPU kernel; ``Tensor.type('torch.HalfTensor')``
raises KeyError; ``torch.diag`` of a vector ignores ``diagonal`` and of a matrix returns a 4-d tensor.
Arguments are checked in Python before any kernel runs.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["flip_wrapper"]


def flip_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``flip`` with ``dims`` given as one int (``x.flip(0)``, as PyTorch accepts) or as varargs."""

    @functools.wraps(op)
    def flip(input: Any, *dims: Any, **kwargs: Any) -> Any:
        if "dims" in kwargs:
            dims = (kwargs.pop("dims"),)
        if len(dims) == 1:
            dims = dims[0]
        if isinstance(dims, int):
            dims = (dims,)
        return op(input, tuple(dims), **kwargs)

    return flip
