"""Memory that PyTorch shares or lays out in a given order: ``torch.as_tensor`` of an array, ``clone``'s strides.

Measured on MSAdapter 0.5.0b1 against torch 2.13 (tests/conformance/cases/fix_memory_layout.py):

- ``torch.as_tensor(ndarray)`` copied the array (``mindspore.Tensor(data)``): a write through the array or through
  the tensor was not seen by the other, where PyTorch shares the memory when no other dtype is asked for. Here it
  shares it as ``torch.from_numpy`` does (C-contiguous, writeable arrays; others are copied, logged); ``as_tensor``
  of a tensor of the asked dtype is that tensor, as in PyTorch.
- ``x.t().clone()`` came back contiguous (strides ``(3, 1)`` for a ``[4, 3]`` transpose; PyTorch's default
  ``memory_format=torch.preserve_format`` keeps ``(1, 4)``), so ``is_contiguous()`` said True where PyTorch says
  False and ``.view(-1)`` worked where PyTorch refuses. Here a non-contiguous input is copied in the order of its
  strides (PyTorch's ``infer_dense_strides``) and permuted back: the copy has PyTorch's strides, and writes through
  it reach its own memory only; a contiguous input takes the original path unchanged. ``clone(memory_format=
  torch.contiguous_format)`` copies contiguously (the formats: :mod:`mindspeed_ms.compat.memory_formats`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["as_tensor", "clone_wrapper", "tensor_clone_wrapper", "dense_order"]


def as_tensor(data: Any, dtype: Any = None, device: Any = None, **kwargs: Any) -> Any:
    """``torch.as_tensor``: ``data`` itself when it is a tensor of ``dtype``; a tensor sharing a NumPy array's memory
    when ``dtype`` is None or the array's; otherwise a new tensor (``torch.tensor(data, dtype=dtype)``)."""
    del device  # one device here (MindSpore's), as for every factory of MSAdapter's
    if kwargs:
        raise TypeError(f"as_tensor() got an unexpected keyword argument {sorted(kwargs)[0]!r}")
    import mindspore
    import msadapter
    import numpy as np

    if isinstance(data, mindspore.Tensor):
        return data if dtype is None or data.dtype == dtype else data.to(dtype)
    if isinstance(data, np.ndarray) and data.dtype != np.object_:
        shared = msadapter.from_numpy(data)
        return shared if dtype is None or shared.dtype == dtype else shared.to(dtype)
    return msadapter.tensor(data, dtype=dtype)


def dense_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """The dims from outermost to innermost as PyTorch's ``infer_dense_strides`` orders them: by stride, a larger
    size outer among equal strides, dims of stride 0 kept where they are (an insertion sort, as PyTorch's)."""
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))  # innermost first

    def should_swap(dim0: int, dim1: int) -> int:
        stride0, stride1 = strides[dim0], strides[dim1]
        if stride0 == 0 or stride1 == 0:
            return 0
        if stride0 != stride1:
            return -1 if stride0 < stride1 else 1
        return 1 if shape[dim0] > shape[dim1] else 0

    for i in range(1, ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    return perm[::-1]


def _preserved_copy(copy: Callable[[Any], Any], tensor: Any) -> Any:
    """``copy(tensor)`` laid out in the order of ``tensor``'s strides (PyTorch's preserve_format)."""
    shape, strides = tuple(int(n) for n in tensor.shape), tuple(int(s) for s in tensor.stride())
    order = dense_order(shape, strides)
    if order == list(range(len(shape))):
        return copy(tensor)
    inverse = [0] * len(order)
    for position, dim in enumerate(order):
        inverse[dim] = position
    return copy(tensor.permute(*order).contiguous()).permute(*inverse)


def _clone(op: Callable[[Any], Any], tensor: Any, kwargs: dict[str, Any]) -> Any:
    unknown = set(kwargs) - {"memory_format"}
    if unknown:
        raise TypeError(f"clone() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    from mindspeed_ms.compat.memory_formats import wants_contiguous

    if "memory_format" in kwargs and wants_contiguous("clone", kwargs["memory_format"], len(tensor.shape)):
        return op(tensor.contiguous())
    if len(tensor.shape) < 2 or tensor.is_contiguous():
        return op(tensor)
    return _preserved_copy(op, tensor)


def tensor_clone_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.clone(*, memory_format=torch.preserve_format)`` with PyTorch's strides."""

    @functools.wraps(op)
    def clone(self: Any, **kwargs: Any) -> Any:
        return _clone(op, self, kwargs)

    return clone


def clone_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.clone(input, *, memory_format=torch.preserve_format)`` with PyTorch's strides."""

    @functools.wraps(op)
    def clone(input: Any, **kwargs: Any) -> Any:
        return _clone(op, input, kwargs)

    return clone
