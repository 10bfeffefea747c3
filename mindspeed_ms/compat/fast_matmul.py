"""``torch.matmul`` of a transposed matrix without the transposed copy (MindSpore's CPU backend).

Megatron's linear layers compute ``torch.matmul(input, weight.t())`` in the forward pass and
``grad_output.t().matmul(input)`` for the weight gradient. ``t()`` is a strided view; MindSpore's CPU
MatMul first copies a non-contiguous operand into contiguous memory, and that copy is slow on the CPU
backend (a 2048x512 float32 weight: 7-23 ms, more than the matmul itself, 6-10 ms). PyTorch's GEMM takes
the transposed layout as it is.

Here a 2-D operand whose strides are exactly those of a transposed contiguous matrix is handed to
MindSpore's ``MatMul`` with ``transpose_a``/``transpose_b`` set, over ``operand.t()`` (a view with
contiguous strides of the same memory): the same product, the GEMM reading the memory in place, and
autograd flowing through MatMul's own gradient (which uses the transpose flags too). Every other call
(batched operands, vectors, non-float dtypes, ``out=``, layouts that are not a plain transpose) goes to
MSAdapter's matmul unchanged. Results agree with the copy-then-multiply path to float32 GEMM rounding
(tests/test_compat_fast_matmul.py compares both with real PyTorch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["transposed_operand_wrapper"]


@functools.lru_cache(maxsize=4)
def _matmul(transpose_a: bool, transpose_b: bool) -> Any:
    from mindspore import ops

    return ops.MatMul(transpose_a=transpose_a, transpose_b=transpose_b)


@functools.lru_cache(maxsize=1)
def _float_dtypes() -> tuple[Any, ...]:
    import mindspore

    return (mindspore.float32, mindspore.float16)


def _is_transposed(tensor: Any, shape: tuple[int, ...]) -> bool:
    """Whether a 2-D ``tensor`` of ``shape`` is ``t()`` of a contiguous matrix (strides (1, rows))."""
    rows, columns = shape
    return rows > 1 and columns > 1 and tuple(tensor.stride()) == (1, rows)


def transposed_operand_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap MSAdapter's ``matmul``: a transposed 2-D operand goes to ``MatMul`` with its transpose flag set.

    Args:
        op: ``msadapter.ops.blas.matmul`` (also ``Tensor.matmul``) or ``Tensor.__matmul__``.

    Returns:
        ``op``'s signature; the same values (to float32 GEMM rounding), without copying a transposed operand.
    """

    @functools.wraps(op)
    def matmul(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return op(input, other, *args, **kwargs)
        shape_b = getattr(other, "_shape", None)
        shape_a = getattr(input, "_shape", None)
        if shape_b is None or shape_a is None or len(shape_b) != 2 or len(shape_a) < 2:
            return op(input, other)
        dtype = input.dtype
        if dtype not in _float_dtypes() or other.dtype is not dtype:
            return op(input, other)
        shape_b = tuple(shape_b)
        shape_a = tuple(shape_a)
        transpose_b = _is_transposed(other, shape_b)
        transpose_a = len(shape_a) == 2 and _is_transposed(input, shape_a)
        if not (transpose_a or transpose_b) or shape_a[-1] != shape_b[0]:
            return op(input, other)
        left = input.t() if transpose_a else input
        right = other.t() if transpose_b else other
        if len(shape_a) == 2:
            return _matmul(transpose_a, transpose_b)(left, right)
        if not input.is_contiguous():
            return op(input, other)
        product = _matmul(False, True)(left.reshape(-1, shape_a[-1]), right)
        return product.reshape(*shape_a[:-1], shape_b[1])

    return matmul
