"""Array functions of torch that MSAdapter 0.5.0b1 does not have (AttributeError), composed of ops it has.

``torch.movedim``, ``torch.unflatten``/``Tensor.unflatten``, ``torch.take_along_dim``,
``torch.block_diag``, ``torch.tril_indices``/``triu_indices``, ``torch.nanmean``, ``torch.logaddexp`` (and
``torch.unflatten``, which reshaped the whole tensor, ``Tensor.logaddexp``, nan for equal infinities): none is called
by the field's sources (megatron-core, MindSpeed, MindSpeed-LLM); common elsewhere in PyTorch code. Compared with
torch 2.13 by tests/conformance/cases/fix_absent_array_functions.py; arguments are checked in Python before any
kernel, with PyTorch's builtin class.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["movedim", "unflatten", "unflatten_wrapper", "tensor_unflatten", "logaddexp_method", "take_along_dim",
           "block_diag", "tril_indices", "triu_indices", "nanmean", "logaddexp"]


def _dims(value: Any) -> list[int]:
    return [int(value)] if isinstance(value, int) else [int(d) for d in value]


def _dim(ndim: int, dim: int) -> int:
    low, high = -max(ndim, 1), max(ndim, 1) - 1
    if not low <= dim <= high:
        raise IndexError(f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})")
    return dim % max(ndim, 1)


def movedim(input: Any, source: Any, destination: Any) -> Any:
    """``torch.movedim``: the dims ``source`` moved to ``destination``, the others keep their order."""
    if isinstance(source, int) != isinstance(destination, int):  # PyTorch's overloads: (int, int), (tuple, tuple)
        raise TypeError(f"movedim() received an invalid combination of arguments - got ({type(source).__name__}, "
                        f"{type(destination).__name__})")
    ndim = len(input.shape)
    sources, destinations = _dims(source), _dims(destination)
    if len(sources) != len(destinations):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({sources} dims) should contain the "
                           f"same number of dims as destination ({destinations} dims)")
    sources = [_dim(ndim, d) for d in sources]
    destinations = [_dim(ndim, d) for d in destinations]
    if len(set(sources)) != len(sources):
        raise RuntimeError(f"movedim: repeated dim in `source` ({sources})")
    if len(set(destinations)) != len(destinations):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({destinations})")
    order: list[int | None] = [None] * ndim
    for s, d in zip(sources, destinations):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in sources)
    return input.permute(*[next(rest) if d is None else d for d in order]) if ndim else input


def unflatten(input: Any, dim: int, sizes: Sequence[int]) -> Any:
    """``torch.unflatten``: dim ``dim`` split into ``sizes`` (one of them may be -1)."""
    shape = tuple(int(n) for n in input.shape)
    dim = _dim(len(shape), dim)
    sizes = [int(n) for n in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    known = 1
    for n in sizes:
        known *= n if n != -1 else 1
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if -1 in sizes:
        if known == 0 or shape[dim] % known:
            raise RuntimeError(f"shape '{sizes}' is invalid for input of size {shape[dim]}")
        sizes[sizes.index(-1)] = shape[dim] // known
    elif known != shape[dim]:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                           f"({shape[dim]}) in the input tensor")
    return input.reshape(*shape[:dim], *sizes, *shape[dim + 1:])


def tensor_unflatten(self: Any, dim: int, sizes: Sequence[int]) -> Any:
    """``Tensor.unflatten``: see :func:`unflatten`."""
    return unflatten(self, dim, sizes)


def unflatten_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.unflatten`` as :func:`unflatten`: MSAdapter's (``x``, ``dim``, ``sizes``) reshapes the whole tensor
    to ``sizes`` ("proposed_shape [2, 3, 1] is invalid for input of size 120"); its ``x=`` keyword is kept."""

    @functools.wraps(op)
    def unflatten_(*args: Any, **kwargs: Any) -> Any:
        if "x" in kwargs:
            kwargs["input"] = kwargs.pop("x")
        return unflatten(*args, **kwargs)

    return unflatten_


def take_along_dim(input: Any, indices: Any, dim: int | None = None) -> Any:
    """``torch.take_along_dim``: ``gather`` along ``dim`` after broadcasting the other dims (flat when None)."""
    import mindspore
    import msadapter

    if indices.dtype not in (mindspore.int64, mindspore.int32):
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be int64 but got {indices.dtype} "
                           f"instead")
    if dim is None:
        return msadapter.gather(input.reshape(-1), 0, indices.reshape(-1))
    if len(input.shape) != len(indices.shape):
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {len(input.shape)} dimensions for input, and {len(indices.shape)} dimensions "
                           f"for indices")
    dim = _dim(len(input.shape), dim)
    input_shape, index_shape = list(input.shape), list(indices.shape)
    input_shape[dim], index_shape[dim] = 1, 1
    batch = [max(int(a), int(b)) for a, b in zip(input_shape, index_shape)]
    wanted_input, wanted_index = list(batch), list(batch)
    wanted_input[dim], wanted_index[dim] = int(input.shape[dim]), int(indices.shape[dim])
    return msadapter.gather(input.broadcast_to(tuple(wanted_input)), dim,
                            indices.broadcast_to(tuple(wanted_index)))


def block_diag(*tensors: Any) -> Any:
    """``torch.block_diag``: the tensors (0-d: 1x1, 1-d: one row) on the diagonal, zeros elsewhere, of the
    promoted dtype."""
    import msadapter

    from mindspeed_ms.compat.absent_functions import promote_types

    blocks: list[Any] = []
    for tensor in tensors:
        if len(tensor.shape) > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                               f"{len(blocks)} has {len(tensor.shape)} dimensions")
        blocks.append(tensor.reshape(1, -1) if len(tensor.shape) < 2 else tensor)
    if not blocks:
        return msadapter.zeros(1, 0)
    dtype = blocks[0].dtype
    for block in blocks[1:]:
        dtype = promote_types(dtype, block.dtype)
    width = sum(int(b.shape[1]) for b in blocks)
    rows, before = [], 0
    for block in blocks:
        height, columns = int(block.shape[0]), int(block.shape[1])
        parts = [msadapter.zeros(height, before, dtype=dtype), block.to(dtype),
                 msadapter.zeros(height, width - before - columns, dtype=dtype)]
        rows.append(msadapter.cat(parts, 1))
        before += columns
    return msadapter.cat(rows, 0)


def _triangle_indices(name: str, row: int, col: int, offset: int, dtype: Any, lower: bool) -> Any:
    import msadapter
    import numpy as np

    if row < 0 or col < 0:
        raise RuntimeError(f"{name}: row and col must be non-negative, got {row} and {col}")
    mask = np.tri(row, col, offset, dtype=bool) if lower else ~np.tri(row, col, offset - 1, dtype=bool)
    rows, columns = np.nonzero(mask)
    return msadapter.tensor(np.stack((rows, columns)).astype(np.int64).reshape(2, -1),
                            dtype=msadapter.int64 if dtype is None else dtype)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Any:
    """``torch.tril_indices``: the (row, column) indices of the lower triangle of a ``row`` x ``col`` matrix."""
    del device, layout
    return _triangle_indices("tril_indices", row, col, offset, dtype, lower=True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Any:
    """``torch.triu_indices``: the (row, column) indices of the upper triangle of a ``row`` x ``col`` matrix."""
    del device, layout
    return _triangle_indices("triu_indices", row, col, offset, dtype, lower=False)


def nanmean(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """``torch.nanmean``: the mean of the non-nan elements (nan where there are none)."""
    import mindspore
    import msadapter

    if input.dtype not in (mindspore.float16, mindspore.bfloat16, mindspore.float32, mindspore.float64):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype}")
    values = input if dtype is None else input.to(dtype)
    kept = msadapter.logical_not(msadapter.isnan(values))
    zero = msadapter.zeros((), dtype=values.dtype)
    if dim is None:
        return msadapter.where(kept, values, zero).sum() / kept.sum().to(values.dtype)
    total = msadapter.where(kept, values, zero).sum(dim, keepdim=keepdim)
    return total / kept.sum(dim, keepdim=keepdim).to(values.dtype)


def logaddexp_method(self: Any, other: Any) -> Any:
    """``Tensor.logaddexp`` (MindSpore's gives nan for two equal infinities): see :func:`logaddexp`."""
    return logaddexp(self, other)


def logaddexp(input: Any, other: Any) -> Any:
    """``torch.logaddexp``: ``log(exp(a) + exp(b))`` without overflow; equal infinities give themselves."""
    import msadapter

    larger = msadapter.maximum(input, other)
    difference = msadapter.where(input == other, msadapter.zeros((), dtype=larger.dtype), (input - other).abs())
    return larger + msadapter.log1p(msadapter.exp(-difference))
