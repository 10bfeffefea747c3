"""Matrix products and splits with empty operands, as PyTorch computes them (MindSpore's CPU backend).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13 (tests/conformance/cases/
ops_empty_operands.py): a product whose inner dimension is 0 returns **uninitialised memory** where PyTorch returns
zeros (``torch.matmul(torch.zeros(3, 0), torch.zeros(0, 2))`` held 2.8e-45 and other leftovers), and so does the
gradient MindSpore's ``MatMul`` bprop computes for the weight of ``F.linear`` applied to zero rows. Megatron's
``SequentialMLP`` (MoE without grouped GEMM, the CPU's only choice) splits the permuted tokens by
``tokens_per_expert`` and runs every expert, also one that received no token: that expert's weight gradient
(``grad_output.t().matmul(input)`` over zero rows) was garbage, silently, where PyTorch's is zeros. And
``torch.split`` with a first section of size 0 failed in its backward (``StridedSliceGrad ... memory out of
bounds``) where PyTorch's backward gives the input its gradient.

Here a product with an empty operand is computed as PyTorch defines it: a new tensor of the product's shape, zeros,
by an autograd Function whose backward gives each operand zeros of its shape, as PyTorch's does (a Function: the
sum of an empty tensor is not recorded by MindSpore's autograd, so an expression over the operands would not do).
A split with sections of size 0 takes the non-empty sections from MindSpore's split and the empty ones from a
Function whose backward gives the input zeros (``index_select`` of no index would do in the forward, but its
backward fails on the empty gradient: UnsortedSegmentSum "loop_size_ should be greater than 0"). Everything else
goes to the original op untouched; the check reads the operands' shapes only.

Empty results PyTorch gives and MindSpore refuses (loud before, not wrong): ``narrow`` of length 0 (also at
``start == size``), ``topk`` with ``k = 0`` and ``layer_norm`` of a tensor with no element (an MoE expert or a
sequence-parallel shard without tokens) raised; here they return the empty result, recorded by autograd with zero
gradients (``layer_norm``'s weight and bias included).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mindspeed_ms.compat.function_grads import own_function

__all__ = ["product_shape", "empty_product", "empty_product_wrapper", "empty_linear_wrapper",
           "empty_sections_split_wrapper", "empty_narrow_wrapper", "empty_topk_wrapper", "empty_layer_norm_wrapper"]


def product_shape(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> tuple[int, ...] | None:
    """``torch.matmul``'s result shape for operands of these shapes, or None when they do not multiply."""
    if not shape_a or not shape_b:
        return None
    a = (1, *shape_a) if len(shape_a) == 1 else shape_a
    b = (*shape_b, 1) if len(shape_b) == 1 else shape_b
    if a[-1] != b[-2]:
        return None
    try:
        batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    except ValueError:
        return None
    shape = (*batch, a[-2], b[-1])
    if len(shape_b) == 1:
        shape = shape[:-1]
    if len(shape_a) == 1:
        shape = (*shape[:-2], shape[-1]) if len(shape_b) > 1 else shape[:-1]
    return tuple(int(n) for n in shape)


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Functions (built on first use: MSAdapter's ``torch`` must be importable)."""
    from msadapter import zeros
    class EmptyProduct(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """Zeros of the product's shape; both operands' gradients zeros of their shapes."""

        @staticmethod
        def forward(ctx: Any, input: Any, other: Any, shape: tuple[int, ...]) -> Any:
            ctx.shapes = (tuple(input.shape), tuple(other.shape))
            return zeros(shape, dtype=input.dtype)  # Tensor.new_zeros(()) fails under MSAdapter

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            shape_a, shape_b = ctx.shapes
            return grad.new_zeros(shape_a), grad.new_zeros(shape_b), None

    class EmptyPiece(own_function()):  # type: ignore[misc]
        """An empty tensor of ``shape`` taken from ``input`` (a split's empty section); its gradient zeros."""

        @staticmethod
        def forward(ctx: Any, input: Any, shape: tuple[int, ...]) -> Any:
            ctx.shape = tuple(input.shape)
            return input.new_zeros(shape)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad.new_zeros(ctx.shape), None

    return EmptyProduct, EmptyPiece


def empty_product(input: Any, other: Any, shape: tuple[int, ...]) -> Any:
    """Zeros of ``shape`` (the product of ``input`` and ``other``, one of them empty), recorded by autograd with
    zero gradients of the operands' shapes (PyTorch's: a sum over an empty dimension)."""
    return _function()[0].apply(input, other, shape)


def _empty_operand(input: Any, other: Any) -> tuple[int, ...] | None:
    """The product's shape when one of two tensors is empty and they multiply, else None."""
    shape_a, shape_b = getattr(input, "shape", None), getattr(other, "shape", None)
    if shape_a is None or shape_b is None or (0 not in shape_a and 0 not in shape_b):
        return None
    return product_shape(tuple(shape_a), tuple(shape_b))


def empty_product_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.matmul``/``mm``/``bmm`` (and the Tensor methods, ``@``): an empty operand gives zeros."""

    @functools.wraps(op)
    def product(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs:
            shape = _empty_operand(input, other)
            if shape is not None:
                return empty_product(input, other, shape)
        return op(input, other, *args, **kwargs)

    return product


def empty_linear_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.nn.functional.linear``: an empty input or weight gives zeros (plus the bias)."""

    @functools.wraps(op)
    def linear(input: Any, weight: Any, bias: Any = None) -> Any:
        shape_w = getattr(weight, "shape", None)
        if shape_w is not None and len(shape_w) == 2:
            transposed = (shape_w[1], shape_w[0])
            shape_a = getattr(input, "shape", None)
            if shape_a is not None and (0 in shape_a or 0 in shape_w):
                shape = product_shape(tuple(shape_a), transposed)
                if shape is not None:
                    result = empty_product(input, weight, shape)
                    return result if bias is None else result + bias
        return op(input, weight, bias)

    return linear


def _sections(length: int, split: Any) -> list[int] | None:
    """The sections of a split by a sequence of sizes with a 0 among them (summing to ``length``), else None."""
    if (isinstance(split, Sequence) and not isinstance(split, str) and 0 in split
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in split)
            and sum(split) == length):
        return list(split)
    return None


#: the keywords of ``torch.split`` (``split_size_or_sections``, ``dim``) and ``Tensor.split`` (``split_size``)
_SPLIT_KEYWORDS = frozenset(("split_size_or_sections", "split_size", "dim"))


def empty_sections_split_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.split``/``Tensor.split``: sections of size 0 as ``index_select`` of no index."""

    @functools.wraps(op)
    def split(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        sizes = args[0] if args else kwargs.get("split_size_or_sections", kwargs.get("split_size"))
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
        shape = getattr(tensor, "shape", None)
        if (shape is None or len(args) > 2 or set(kwargs) - _SPLIT_KEYWORDS or not isinstance(dim, int)
                or isinstance(dim, bool)
                or not -len(shape) <= dim < len(shape)):
            return op(tensor, *args, **kwargs)
        dim %= len(shape)
        sections = _sections(shape[dim], sizes)
        if sections is None:
            return op(tensor, *args, **kwargs)
        filled = [n for n in sections if n]
        pieces = list(op(tensor, filled, dim)) if filled else []
        empty = (*shape[:dim], 0, *shape[dim + 1:])
        return tuple(pieces.pop(0) if n else _function()[1].apply(tensor, empty) for n in sections)

    return split



def _int_arg(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def empty_narrow_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.narrow``/``Tensor.narrow``: a length of 0 gives the empty piece (``start`` may equal the size)."""

    @functools.wraps(op)
    def narrow(input: Any, dim: Any, start: Any, length: Any) -> Any:
        shape = getattr(input, "shape", None)
        if length == 0 and _int_arg(length) and _int_arg(dim) and _int_arg(start) and shape is not None \
                and -len(shape) <= dim < len(shape):
            dim %= len(shape)
            if -shape[dim] <= start <= shape[dim]:
                empty = (*shape[:dim], 0, *shape[dim + 1:])
                return _function()[1].apply(input, empty)
        return op(input, dim, start, length)

    return narrow


def empty_topk_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.topk``/``Tensor.topk``: ``k = 0`` gives empty values and int64 indices."""

    @functools.wraps(op)
    def topk(input: Any, k: Any, dim: Any = -1, largest: Any = True, sorted: Any = True, **kwargs: Any) -> Any:
        shape = getattr(input, "shape", None)
        if k == 0 and _int_arg(k) and _int_arg(dim) and not kwargs and shape is not None:
            from msadapter import int64, zeros

            from mindspeed_ms.compat.return_types import return_type

            rank = max(len(shape), 1)
            if -rank <= dim < rank:
                dim %= rank
                empty = (*shape[:dim], 0, *shape[dim + 1:]) if shape else (0,)
                values = _function()[1].apply(input, empty)
                return return_type("topk")((values, zeros(empty, dtype=int64)))
        return op(input, k, dim, largest, sorted, **kwargs)

    return topk


def empty_layer_norm_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.layer_norm``: an input without elements gives an empty output, zero gradients for all."""

    @functools.wraps(op)
    def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: Any = 1e-5,
                   *args: Any, **kwargs: Any) -> Any:
        shape = getattr(input, "shape", None)
        if args or kwargs or shape is None or 0 not in shape:
            return op(input, normalized_shape, weight, bias, eps, *args, **kwargs)
        dims = (normalized_shape,) if _int_arg(normalized_shape) else tuple(normalized_shape)
        if tuple(shape[len(shape) - len(dims):]) != dims or len(dims) > len(shape):
            return op(input, normalized_shape, weight, bias, eps)  # MSAdapter's (and PyTorch's) shape refusal
        shape = tuple(shape)
        result = _function()[1].apply(input, shape)
        for parameter in (weight, bias):
            if parameter is not None:
                result = empty_product(result, parameter, shape)
        return result

    return layer_norm
