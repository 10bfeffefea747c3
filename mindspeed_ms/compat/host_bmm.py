"""``torch.bmm`` and ``torch.baddbmm(beta=0)`` of large float32 batches computed by NumPy/OpenBLAS on the host.

Megatron's attention multiplies ``[b * heads, seq, head_dim]`` batches twice per layer: the scores
``torch.baddbmm(buffer, query.transpose(0, 1), key.transpose(0, 1).transpose(1, 2), beta=0.0, alpha=scale)`` and
the context ``torch.bmm(probs, value.transpose(0, 1))``, the operands strided views of the QKV projection. On
MindSpore's CPU backend each makes its strided operands contiguous with a slow copy, then runs a BatchMatMul
kernel, and autograd differentiates through the same kernels (two batched products per call, the baddbmm's alpha
an extra Mul). NumPy's ``matmul`` hands every matrix of the batch to OpenBLAS's sgemm, reading the strided views
in place.

The products are float32 GEMMs as PyTorch's (MKL/oneDNN) are: they agree to GEMM rounding, the order of the
sums differing. ``baddbmm`` with ``beta=0`` ignores ``input`` (NaN in it does not propagate, as in PyTorch) and
scales the product by ``alpha``; its gradients are PyTorch's ``alpha * (grad @ batch2^T)`` and
``alpha * (batch1^T @ grad)``.

Taken: float32 3-D operands of matching batch and inner sizes whose product has at least :data:`MIN_ELEMENTS`
elements; for ``baddbmm``, ``beta=0`` given as a keyword, a number ``alpha``, and an ``input`` that does not
require a gradient. Everything else goes to the wrapped function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["MIN_ELEMENTS", "baddbmm_wrapper", "bmm_wrapper"]

#: below this many elements of the product MindSpore's kernels are as fast as the round trip through NumPy
MIN_ELEMENTS = 65536


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    import numpy as np
    from mindspore import Tensor
    from msadapter.autograd import Function

    from mindspeed_ms.compat.host_memory import host_array

    def scaled(product: Any, alpha: float) -> Any:
        if alpha != 1.0:
            product *= np.float32(alpha)
        return Tensor.from_numpy(product)

    def gradient(left: Any, right: Any, like: Any, alpha: float) -> Any:
        """``alpha * (left @ right)`` laid out in memory as ``like`` (an operand, often a transposed view): the
        autograd of the views it came from then finds its gradient contiguous instead of copying it."""
        order = sorted(range(3), key=lambda axis: -like.strides[axis])
        if order == [0, 1, 2]:
            return scaled(np.matmul(left, right), alpha)
        memory = np.empty([like.shape[axis] for axis in order], dtype=np.float32)
        out = memory.transpose([order.index(axis) for axis in range(3)])
        np.matmul(left, right, out=out)
        if alpha != 1.0:
            memory *= np.float32(alpha)
        return Tensor.from_numpy(memory).permute(*[order.index(axis) for axis in range(3)])

    class HostBmm(Function):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``alpha * (batch1 @ batch2)`` with NumPy's matmul, forward and backward."""

        @staticmethod
        def forward(ctx: Any, batch1: Any, batch2: Any, alpha: float) -> Any:
            first, second = host_array(batch1), host_array(batch2, sync=False)
            ctx.saved = (first, second, alpha)
            ctx.kept = (batch1, batch2)  # the memory the arrays read
            return scaled(np.matmul(first, second), alpha)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            first, second, alpha = ctx.saved
            del ctx.saved, ctx.kept
            incoming = host_array(grad)
            return (gradient(incoming, second.transpose(0, 2, 1), first, alpha),
                    gradient(first.transpose(0, 2, 1), incoming, second, alpha), None)

    return HostBmm


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def _taken(batch1: Any, batch2: Any) -> bool:
    first, second = getattr(batch1, "_shape", None), getattr(batch2, "_shape", None)
    if first is None or second is None or len(first) != 3 or len(second) != 3:
        return False
    if first[0] != second[0] or first[2] != second[1] or first[0] * first[1] * second[2] < MIN_ELEMENTS:
        return False
    return batch1.dtype is _float32() and batch2.dtype is _float32()


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _broadcasts(input: Any, shape: tuple[int, int, int]) -> bool:
    """Whether ``input`` broadcasts to the product's shape (PyTorch checks it even with ``beta=0``)."""
    own = getattr(input, "_shape", None)
    return own is not None and len(own) <= 3 and all(
        d in (1, s) for d, s in zip(reversed(tuple(own)), reversed(shape)))


def bmm_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.bmm(input, mat2)`` / ``Tensor.bmm(mat2)``."""

    @functools.wraps(op)
    def bmm(input: Any, mat2: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or not _taken(input, mat2):
            return op(input, mat2, *args, **kwargs)
        return _function().apply(input, mat2, 1.0)

    return bmm


def baddbmm_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.baddbmm(input, batch1, batch2, *, beta=1, alpha=1)`` / ``Tensor.baddbmm``: ``beta=0`` only."""

    @functools.wraps(op)
    def baddbmm(input: Any, batch1: Any, batch2: Any, *args: Any, **kwargs: Any) -> Any:
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        if (args or set(kwargs) - {"beta", "alpha"} or not _number(beta) or beta != 0 or not _number(alpha)
                or getattr(input, "requires_grad", True) or not _taken(batch1, batch2)
                or not _broadcasts(input, (batch1._shape[0], batch1._shape[1], batch2._shape[2]))):
            return op(input, batch1, batch2, *args, **kwargs)
        return _function().apply(batch1, batch2, float(alpha))

    return baddbmm
