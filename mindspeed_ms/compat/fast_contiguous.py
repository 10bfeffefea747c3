"""Contiguous copies of strided views made by NumPy on the host (MindSpore's CPU backend).

MindSpore's CPU backend makes a strided view contiguous with a slow copy: ~3.7 ms for megatron's query
``transpose(0, 1)`` at the mid size (32 x 128 x 64 floats), where NumPy's ``ascontiguousarray`` over the
same host memory takes ~0.4 ms. Kernels make their non-contiguous inputs contiguous the same slow way:
megatron's attention ``torch.baddbmm(buffer, query.transpose(0, 1), key.transpose(0, 1).transpose(1, 2))``
and ``torch.bmm(probs, value.transpose(0, 1))`` took ~10 ms each, ~1 ms with contiguous operands.

:func:`host_contiguous` copies through :func:`~mindspeed_ms.compat.host_memory.host_array` into a new
tensor, as an autograd Function whose backward hands the gradient through unchanged (a contiguous copy
is the identity on values). ``Tensor.contiguous`` and the batched matmuls' operands use it for tensors of
at least :data:`MIN_ELEMENTS` elements, float32 ones from :data:`MIN_FLOAT32_ELEMENTS` (one copy straight into a new
tensor's memory: ~20 us against MindSpore's ~40-60 us for megatron's embedding and loss transposes at the tiny size,
[32, 2, 64]; for other dtypes the host path builds the tensor from a NumPy copy, slower than MindSpore's below
~16K elements); smaller ones, and tensors already contiguous, take MindSpore's path. The values are the same bits
(a copy).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.function_grads import own_function

__all__ = ["MIN_ELEMENTS", "MIN_FLOAT32_ELEMENTS", "batched_operands_wrapper", "contiguous_wrapper", "host_clone",
           "host_contiguous"]

#: below this many elements MindSpore's own copy is cheap enough
MIN_ELEMENTS = 16384
#: the same for float32 tensors (copied straight into the new tensor's memory)
MIN_FLOAT32_ELEMENTS = 1024


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    import mindspore
    import numpy as np
    from mindspore import Tensor

    from mindspeed_ms.compat.host_arithmetic import contiguous_copy
    from mindspeed_ms.compat.host_memory import host_array
    from mindspeed_ms.compat.host_outputs import new_float32

    float32 = mindspore.float32

    class HostContiguous(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """A contiguous copy made by NumPy; the gradient passes through."""

        @staticmethod
        def forward(ctx: Any, tensor: Any) -> Any:
            if tensor._dtype is float32:  # one copy, straight into MindSpore's memory
                result, out = new_float32(tuple(tensor._shape))
                contiguous_copy(host_array(tensor), out)
                return result
            return Tensor(np.ascontiguousarray(host_array(tensor)), dtype=tensor.dtype)  # a copy, then Tensor's

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad

    return HostContiguous


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def _copied(tensor: Any) -> bool:
    """Whether ``tensor`` is a strided view worth copying on the host."""
    shape = getattr(tensor, "_shape", None)
    if shape is None:
        return False
    least = MIN_FLOAT32_ELEMENTS if getattr(tensor, "_dtype", None) is _float32() else MIN_ELEMENTS
    return math.prod(shape) >= least and not tensor.is_contiguous()


def host_contiguous(tensor: Any) -> Any:
    """Return a contiguous copy of ``tensor`` made on the host (gradients flow through), or ``tensor`` itself.

    Args:
        tensor: a MindSpore/MSAdapter tensor on the CPU backend.

    Returns:
        ``tensor`` when it is contiguous or small, else a new contiguous tensor of the same values and dtype.
    """
    return _function().apply(tensor) if _copied(tensor) else tensor


def host_clone(tensor: Any) -> Any:
    """A copy of a contiguous float32 tensor made on the host (``Tensor.clone``), or None for any other tensor.

    MindSpore's copy (its Identity kernel, ``ops.deepcopy``) costs ~35-45 us a call at any small size; this one ~10 us
    outside autograd's record (a new tensor of MindSpore's memory holding NumPy's copy) and ~17 us in it (the autograd
    Function above: the gradient passes through, as ``clone``'s). megatron's ``loss_func`` clones its loss three times a
    micro-batch (``loss.clone().detach()``, ``loss[1].clone()``, ``loss[0].clone()``). The same bits.
    """
    from mindspeed_ms.compat.host_memory import contiguity_read, host_array, host_memory_reason
    from mindspeed_ms.compat.host_outputs import owned_float32
    from mindspeed_ms.compat.inplace_checks import records_grad

    if (getattr(tensor, "_dtype", None) is not _float32() or host_memory_reason() is not None
            or not contiguity_read()(tensor)):
        return None
    if records_grad(tensor):
        return _function().apply(tensor)
    return owned_float32(host_array(tensor))


def contiguous_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.contiguous``: a large strided view is copied by :func:`host_contiguous`."""

    @functools.wraps(op)
    def contiguous(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return op(self, *args, **kwargs)
        if not _copied(self):
            return op(self)
        return _function().apply(self)

    return contiguous


def batched_operands_wrapper(first: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a batched matmul whose matrix operands are the positional arguments ``first`` and ``first + 1``
    (``bmm(input, mat2)``: 0; ``baddbmm(input, batch1, batch2)``: 1): strided operands are copied on the host."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def batched(*args: Any, **kwargs: Any) -> Any:
            if len(args) >= first + 2 and (_copied(args[first]) or _copied(args[first + 1])):
                args = (*args[:first], host_contiguous(args[first]), host_contiguous(args[first + 1]),
                        *args[first + 2:])
            return op(*args, **kwargs)

        return batched

    return wrapper
