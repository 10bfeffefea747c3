"""Index operands built on the host: gather indices as int32 (no Cast kernel in front of MindSpore's CPU Gather),
and the index operands of megatron's vocab-parallel cross entropy (its target mask and masked targets, each
token's logit, the backward's row operands): integer and boolean arithmetic and copies, exact.

MindSpore's CPU ``Gather`` takes int32 indices: given int64 ones (PyTorch's index dtype, so every token and position
id megatron embeds) PyNative launches a ``Cast`` kernel first (~250 us a kernel on the CPU backend, two a training
step of the example: the word and the position embeddings). :func:`int32_indices` reads the int64 indices from host
memory, checks them as PyTorch's embedding does (every index in ``[0, rows)``: PyTorch raises ``IndexError: index out
of range in self``; the Cast wrapped ``-1`` and ``2**32 + 1`` into valid rows silently) and writes them as int32
into a new tensor of MindSpore's memory: the same rows gathered, no kernel.
"""

from __future__ import annotations

import functools
from typing import Any

from mindspeed_ms.compat.errors import OpIndexRefusedError
from mindspeed_ms.compat.host_arithmetic import narrow_indices
from mindspeed_ms.compat.host_memory import host_array, host_memory_reason
from mindspeed_ms.compat.host_outputs import new_empty

__all__ = ["int32_indices", "picked_logits", "row_operands", "target_operands"]


@functools.lru_cache(maxsize=1)
def _dtypes() -> tuple[Any, Any]:
    import mindspore

    return mindspore.int64, mindspore.int32


def int32_indices(indices: Any, rows: int, op: str) -> Any:
    """Return ``indices`` (int64, every one in ``[0, rows)``) as a new int32 tensor, or ``indices`` itself where
    this does not apply (another dtype, no elements, tensor memory that is not host memory).

    Raises:
        OpIndexRefusedError: an index outside ``[0, rows)`` (PyTorch's IndexError), named after ``op``.
    """
    int64, int32 = _dtypes()
    if getattr(indices, "dtype", None) is not int64 or host_memory_reason() is not None or rows > 2**31:
        return indices
    shape = tuple(indices.shape)
    source = host_array(indices)
    if source.size == 0:
        return indices
    result = new_empty(shape, int32)  # memory only, no kernel; dropped when an index is refused
    if not narrow_indices(source, host_array(result, sync=False), rows):  # in [0, rows), rows <= 2**31: exact
        raise OpIndexRefusedError(op, IndexError("index out of range in self"))
    return result


def row_operands(target_mask: Any, rows: int) -> tuple[Any, Any] | None:
    """Return ``(arange(rows), 1.0 - target_mask.view(-1).float())`` as new int64 and float32 tensors written on the
    host (megatron's cross entropy backward: a Range, a Cast and a Sub kernel otherwise), or None where this does not
    apply (a mask that is not a bool tensor of ``rows`` elements, tensor memory that is not host memory).

    The values are exact either way: the row numbers, and 1.0 or 0.0 per row.
    """
    import mindspore
    import numpy as np

    if getattr(target_mask, "dtype", None) is not mindspore.bool_ or host_memory_reason() is not None:
        return None
    mask = host_array(target_mask)
    if mask.size != rows or rows == 0:
        return None
    arange = new_empty((rows,), mindspore.int64)
    host_array(arange, sync=False)[...] = np.arange(rows, dtype=np.int64)
    update = new_empty((rows,), mindspore.float32)
    np.subtract(np.float32(1.0), mask.reshape(rows), out=host_array(update, sync=False), dtype=np.float32)
    return arange, update


def target_operands(target: Any, start: int, end: int) -> tuple[Any, Any] | None:
    """Return ``((target < start) | (target >= end), target - start with 0 where masked)`` as new bool and
    ``target``-dtype tensors written on the host (megatron's cross entropy forward: a Less, a GreaterEqual, a
    BitwiseOr and a MaskedFill kernel otherwise), or None where this does not apply (not an int64/int32 tensor, no
    elements, tensor memory that is not host memory)."""
    import mindspore
    import numpy as np

    if getattr(target, "dtype", None) not in _dtypes() or host_memory_reason() is not None:
        return None
    shape = tuple(target.shape)
    ids = host_array(target)
    if ids.size == 0:
        return None
    mask = new_empty(shape, mindspore.bool_)
    mask_array = host_array(mask, sync=False)
    np.logical_or(ids < start, ids >= end, out=mask_array)
    masked = new_empty(shape, target.dtype)
    masked_array = host_array(masked, sync=False)
    np.subtract(ids, ids.dtype.type(start), out=masked_array)  # integer arithmetic: PyTorch's wrap-around too
    masked_array[mask_array] = 0
    return mask, masked


def picked_logits(logits_2d: Any, target_1d: Any, mask: Any) -> Any | None:
    """Return ``logits_2d[arange, target_1d]`` with 0.0 where ``mask`` (of ``rows`` elements) is set, as a new float32
    tensor of ``rows`` elements copied on the host (a GatherD and a MaskedFill kernel otherwise), or None where this
    does not apply (not float32, an index outside the row, tensor memory that is not host memory)."""
    import mindspore
    import numpy as np

    from mindspeed_ms.compat.host_outputs import new_float32

    if getattr(logits_2d, "dtype", None) is not mindspore.float32 or host_memory_reason() is not None:
        return None
    logits = host_array(logits_2d)
    rows, columns = logits.shape
    index = host_array(target_1d, sync=False).reshape(rows)
    flags = host_array(mask, sync=False).reshape(rows)
    if rows == 0 or int(index.min()) < 0 or int(index.max()) >= columns:
        return None
    tensor, out = new_float32((rows,))
    np.copyto(out, logits[np.arange(rows), index])
    out[flags] = 0.0
    return tensor
