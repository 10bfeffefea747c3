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

``operand.t()`` is a view op of its own (a pyboost call, ~40 us at the tiny size, twice per linear layer and step:
the forward's ``weight.t()`` and the weight gradient's ``grad_output.t()``). :func:`transposed_view_wrapper` wraps
``Tensor.t`` so that the view of a 2-D tensor names the tensor it transposes; the matmul then hands that tensor to
MatMul itself, when it still is the view's memory (same address, contiguous, the transposed shape) and no gradient
is recorded through it (autograd off, as in megatron's linear Function, or a tensor that does not require grad).
Otherwise ``operand.t()`` is taken as before. The same MatMul runs on the same memory: bit-identical values.

Host GEMM: MindSpore 2.7.1's CPU MatMul runs megatron's mid-size GEMMs 2-3x slower in a training step than PyTorch
(count_kernels at hidden 512: 218 vs 82 kernel-ms a step). Where no gradient is recorded through the product
(autograd off, as in megatron's linear Function's forward and backward, or no operand requiring grad), float32
operands with a 2-D right operand are multiplied by NumPy's matmul (OpenBLAS) over the operands' host memory, read
in place at their strides (``weight.t()`` and ``grad_output.t()`` through BLAS's transpose flag), into a new tensor
in MindSpore's memory (:func:`~mindspeed_ms.compat.host_outputs.new_float32`): the forward ``input @ weight.t()``
(3-D input folded to 2-D), the input gradient ``grad_output @ weight`` and the weight gradient
``grad_output.t() @ input``. The arithmetic is :func:`~mindspeed_ms.compat.host_kernels.matmul`. Values agree
with PyTorch's to float32 GEMM rounding (another summation order than MindSpore's kernel).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.host_kernels import matmul as host_matmul
from mindspeed_ms.compat.host_memory import host_array
from mindspeed_ms.compat.host_outputs import new_float32
from mindspeed_ms.engine import passthrough

__all__ = ["transposed_operand_wrapper", "transposed_view_wrapper"]

#: the attribute naming, on a view made by ``Tensor.t()``, the 2-D tensor it transposes
_TRANSPOSED_OF = "_mindspeed_transposed_of"


@functools.lru_cache(maxsize=4)
def _matmul(transpose_a: bool, transpose_b: bool) -> Any:
    from mindspore import ops

    return ops.MatMul(transpose_a=transpose_a, transpose_b=transpose_b)


@functools.lru_cache(maxsize=1)
def _float_dtypes() -> tuple[Any, ...]:
    """(float32, float16): the dtypes handled here; float32 first (the host GEMM's)."""
    import mindspore

    return (mindspore.float32, mindspore.float16)


def _is_transposed(tensor: Any, shape: tuple[int, ...]) -> bool:
    """Whether a 2-D ``tensor`` of ``shape`` is ``t()`` of a contiguous matrix (strides (1, rows))."""
    rows, columns = shape
    return rows > 1 and columns > 1 and tuple(tensor.stride()) == (1, rows)


@functools.lru_cache(maxsize=1)
def _grad_enabled() -> Callable[[], bool]:
    """Whether autograd records ops now: the PyNative executor's own flag (no Python frame of MindSpore's around it)."""
    from mindspore.common.api import _pynative_executor

    return _pynative_executor._executor.enable_grad  # type: ignore[no-any-return]


def _untransposed(view: Any, shape: tuple[int, ...]) -> Any:
    """``view.t()`` for a transposed 2-D ``view`` of ``shape``: the tensor ``Tensor.t()`` made it from, where that is
    still the view's memory and no gradient is recorded through the view; else the view op."""
    base = getattr(view, _TRANSPOSED_OF, None)
    if (base is not None and tuple(base._shape) == (shape[1], shape[0]) and base._data_ptr() == view._data_ptr()
            and base.is_contiguous() and not (base.requires_grad and _grad_enabled()())):
        return base
    return view.t()


def transposed_view_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.t``: the transposed view of a 2-D tensor names that tensor (for :func:`_untransposed`).

    Args:
        op: ``Tensor.t(self)``.

    Returns:
        ``op``'s signature and result, the result naming ``input`` where ``input`` is 2-D and the result another
        object (:func:`~mindspeed_ms.engine.passthrough.mark`: no Python frame where the C extension is built).
    """
    return passthrough.mark(op, _TRANSPOSED_OF, shape="_shape", ndim=2)


def transposed_operand_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap MSAdapter's ``matmul``: float32 products with a 2-D right operand that autograd does not record go to the
    host GEMM; otherwise a transposed 2-D operand goes to ``MatMul`` with its transpose flag set.

    Args:
        op: ``msadapter.ops.blas.matmul`` (also ``Tensor.matmul``) or ``Tensor.__matmul__``.

    Returns:
        ``op``'s signature; the same values (to float32 GEMM rounding), without copying a transposed operand.
    """

    @functools.wraps(op)
    def matmul(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return op(input, other, *args, **kwargs)
        try:
            shape_a, shape_b, dtype = input._shape, other._shape, input._dtype
        except AttributeError:  # not two tensors
            return op(input, other)
        if (len(shape_b) != 2 or len(shape_a) < 2 or other._dtype is not dtype or shape_a[-1] != shape_b[0]
                or 0 in shape_a or 0 in shape_b):  # empty operands: compat/empty_operands.py, under this wrap
            return op(input, other)
        float32, float16 = _float_dtypes()
        if dtype is float32 and not (_grad_enabled()() and (input.requires_grad or other.requires_grad)):
            result, out = new_float32((*shape_a[:-1], shape_b[1]))
            host_matmul(host_array(input, sync=False), host_array(other, sync=False), out)
            return result
        if dtype is not float32 and dtype is not float16:
            return op(input, other)
        shape_b = tuple(shape_b)
        shape_a = tuple(shape_a)
        transpose_b = _is_transposed(other, shape_b)
        transpose_a = len(shape_a) == 2 and _is_transposed(input, shape_a)
        if not (transpose_a or transpose_b):
            return op(input, other)
        left = _untransposed(input, shape_a) if transpose_a else input
        right = _untransposed(other, shape_b) if transpose_b else other
        if len(shape_a) == 2:
            return _matmul(transpose_a, transpose_b)(left, right)
        if not input.is_contiguous():
            return op(input, other)
        product = _matmul(False, True)(left.reshape(-1, shape_a[-1]), right)
        return product.reshape(*shape_a[:-1], shape_b[1])

    return matmul
