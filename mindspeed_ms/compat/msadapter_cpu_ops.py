"""PyTorch's semantics for ops MSAdapter sends to MindSpore's generic (non-Ascend) kernels.

Off Ascend MSAdapter 0.5.0b1 calls ``mindspore.ops`` functions whose semantics are not PyTorch's: ``std``
divides by N and ``var`` has no CPU kernel; ``topk``/``sort``/``argsort`` give int32 indices in a plain tuple
(PyTorch: int64, ``.values``/``.indices``); ``bincount`` gives float32 counts; ``index_add`` wants int32 indices
(and its failure used to switch autograd off); ``F.embedding`` ignores ``padding_idx``; a slice assignment into
an int64 tensor keeps only the low 32 bits. Each replacement here computes PyTorch's result with MindSpore
functions that have CPU kernels, validating its arguments in Python before any kernel runs.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.errors import UnsupportedOpOptionError
from mindspeed_ms.compat.host_indices import int32_indices
from mindspeed_ms.compat.return_types import return_type

__all__ = ["UnsupportedOpOptionError", "std", "var", "tensor_std", "tensor_var", "topk_wrapper", "sort",
           "sort_wrapper", "int64_indices_wrapper", "max_wrapper", "min_wrapper", "bincount", "index_add",
           "tensor_index_add", "tensor_index_add_", "embedding", "setitem_through_views_wrapper"]


# --- results with .values / .indices, as torch.return_types ---------------------------------------------------


def _int64(indices: Any) -> Any:
    """The indices as int64, outside autograd (MindSpore marks them as requiring grad when the values do; PyTorch's
    integer tensors never do, and an in-place scatter_ by them made its target record, spuriously)."""
    import mindspore
    import mindspore.ops as ops

    indices = indices if indices.dtype == mindspore.int64 else ops.cast(indices, mindspore.int64)
    return ops.stop_gradient(indices) if indices.requires_grad else indices


def _values_indices(name: str, result: Any) -> Any:
    return return_type(name)((result[0], _int64(result[1])))


def _indexed_result_wrapper(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def with_int64_indices(*args: Any, **kwargs: Any) -> Any:
            result = op(*args, **kwargs)
            if isinstance(result, tuple) or (hasattr(result, "indices") and hasattr(result, "values")):
                return _values_indices(name, tuple(result) if isinstance(result, tuple)
                                       else (result.values, result.indices))
            return result  # a reduction without dim, or max(input, other)

        return with_int64_indices

    return wrapper


#: ``torch.topk``/``Tensor.topk``: ``torch.return_types.topk`` with int64 indices.
topk_wrapper = _indexed_result_wrapper("topk")
#: ``Tensor.sort``: ``torch.return_types.sort`` with int64 indices.
sort_wrapper = _indexed_result_wrapper("sort")
#: ``torch.max``/``Tensor.max`` with ``dim``: ``torch.return_types.max`` with int64 indices.
max_wrapper = _indexed_result_wrapper("max")
#: ``torch.min``/``Tensor.min`` with ``dim``: ``torch.return_types.min`` with int64 indices.
min_wrapper = _indexed_result_wrapper("min")


def sort(input: Any, dim: int = -1, descending: bool = False, stable: bool = False, *, out: Any = None) -> Any:
    """``torch.sort`` with PyTorch's signature (MSAdapter's takes ``dim`` by keyword only) and int64 indices."""
    import mindspore.ops as ops

    del stable  # MindSpore's CPU sort keeps equal elements in order; PyTorch's stable=False allows any order
    result = _values_indices("sort", ops.sort(input, dim, descending))
    if out is not None:
        out[0].copy_(result[0])
        out[1].copy_(result[1])
        return return_type("sort")(out)
    return result


def int64_indices_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Make an op that returns indices (``argsort``, ``argmin``) return them as int64 (MSAdapter: int32 off
    Ascend)."""

    @functools.wraps(op)
    def with_int64_result(*args: Any, **kwargs: Any) -> Any:
        return _int64(op(*args, **kwargs))

    return with_int64_result


# --- std / var ---------------------------------------------------------------------------------------------------


def _correction(dim: Any, unbiased: Any, correction: Any) -> tuple[Any, float]:
    if isinstance(dim, bool):  # std(input, unbiased): the bool overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError("std/var: pass either unbiased or correction, not both")
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    return dim, float(correction)


def _var(op: str, input: Any, dim: Any, unbiased: Any, keepdim: bool, correction: Any) -> Any:
    from mindspore import mint

    from mindspeed_ms.compat.inplace_checks import FLOATING, category

    if category(input) < FLOATING:
        from mindspeed_ms.compat.errors import OpTypeRefusedError

        raise OpTypeRefusedError(op, TypeError(f"std and var only support floating point and complex dtypes, got "
                                               f"{input.dtype}"))
    dim, correction = _correction(dim, unbiased, correction)
    ndim = len(input.shape)
    dims = tuple(range(ndim)) if dim is None or dim == () else ((dim,) if isinstance(dim, int) else tuple(dim))
    dims = tuple(d % ndim if ndim else d for d in dims) if ndim else ()
    count = 1
    for d in dims:
        count *= int(input.shape[d])
    if not dims:
        count = int(input.numel())
    if 0 in tuple(input.shape):  # MindSpore's mean/sum over an empty dim return uninitialised memory
        from mindspeed_ms.compat.reductions import empty_result

        return empty_result(tuple(input.shape), dims, keepdim, float("nan"), input.dtype)
    mean = mint.mean(input, dim=dims, keepdim=True) if dims else input
    deviation = mint.sub(input, mean)
    squares = mint.mul(deviation, deviation)
    total = mint.sum(squares, dim=dims, keepdim=keepdim) if dims else squares
    # PyTorch divides by max(0, N - correction): inf or nan when there are not enough degrees of freedom, and warns
    if count - correction <= 0:
        import warnings

        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      f"factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return mint.div(total, max(0.0, count - correction))


def var(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None,
        out: Any = None) -> Any:
    """``torch.var`` (Bessel-corrected by default; MSAdapter's has no CPU kernel)."""
    result = _var("var", input, dim, unbiased, keepdim, correction)
    if out is not None:
        out.copy_(result)
        return out
    return result


def std(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None,
        out: Any = None) -> Any:
    """``torch.std`` (Bessel-corrected by default; MSAdapter's ``Tensor.std(dim=...)`` divides by N)."""
    from mindspeed_ms.compat.reduction_grad_edges import std_of_variance

    # PyTorch's backward masks a zero std (a constant slice: gradient 0, not MindSpore's nan)
    result = std_of_variance(_var("std", input, dim, unbiased, keepdim, correction))
    if out is not None:
        out.copy_(result)
        return out
    return result


def tensor_std(self: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
               correction: Any = None) -> Any:
    """``Tensor.std``: :func:`std` of ``self``."""
    return std(self, dim, unbiased, keepdim, correction=correction)


def tensor_var(self: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
               correction: Any = None) -> Any:
    """``Tensor.var``: :func:`var` of ``self``."""
    return var(self, dim, unbiased, keepdim, correction=correction)


# --- bincount, index_add, embedding ----------------------------------------------------------------------------


def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Any:
    """``torch.bincount``: int64 counts (float32 weights give float32, other weights float64), as PyTorch."""
    import mindspore
    import mindspore.ops as ops

    from mindspeed_ms.compat.inplace_checks import INTEGRAL, category

    if len(input.shape) != 1 or category(input) != INTEGRAL:
        raise ValueError(f"bincount only supports 1-d non-negative integral inputs, got {input.dtype} of shape "
                         f"{tuple(input.shape)}")
    if weights is not None and tuple(weights.shape) != tuple(input.shape):
        raise ValueError("weights should be 1-d and have the same length as input")
    if minlength < 0:
        raise ValueError("minlength should be >= 0")
    if int(input.numel()) and int(input.min()) < 0:
        raise ValueError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return ops.cast(ops.bincount(input, None, minlength), mindspore.int64)
    if weights.dtype == mindspore.float32:
        return ops.cast(ops.bincount(input, weights, minlength), mindspore.float32)
    return _bincount_float64(input, weights, minlength)


def _bincount_float64(input: Any, weights: Any, minlength: int) -> Any:
    import mindspore
    import mindspore.ops as ops

    length = max(minlength, int(input.max()) + 1 if int(input.numel()) else 0)
    bins = ops.zeros((length,), mindspore.float64)
    return ops.tensor_scatter_add(bins, ops.cast(input, mindspore.int64).reshape(-1, 1),
                                  ops.cast(weights, mindspore.float64))


def index_add(input: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1, out: Any = None) -> Any:
    """``torch.index_add`` with int32 or int64 indices (MindSpore's IndexAdd takes int32 only).

    ``out[index[i]] += alpha * source[i]`` along ``dim``, computed with ``tensor_scatter_add`` on ``dim``
    moved to the front; differentiable in ``input`` and ``source``.
    """
    import mindspore.ops as ops

    from mindspeed_ms.compat.inplace_checks import INTEGRAL, category

    ndim = len(input.shape)
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"index_add: dimension {dim} out of range for a {ndim}-d tensor")
    dim = dim % max(ndim, 1)
    if len(index.shape) > 1 or category(index) != INTEGRAL:
        raise IndexError("index_add_(): Index is supposed to be a vector of integers")
    count = int(index.numel())
    source_count = int(source.shape[dim]) if len(source.shape) else 1
    if count != source_count:
        raise IndexError(f"index_add_(): Number of indices ({count}) should be equal to source.size(dim) "
                         f"({source_count})")
    if input.dtype != source.dtype:
        raise RuntimeError(f"index_add_(): self ({input.dtype}) and source ({source.dtype}) must have the same "
                           f"scalar type")
    size = int(input.shape[dim]) if ndim else 1
    if count and not (int(index.min()) >= -size and int(index.max()) < size):
        raise IndexError(f"index_add_(): index out of range for dimension {dim} of size {size}")
    if ndim == 0:
        return ops.add(input, ops.mul(source.reshape(()), alpha) if alpha != 1 else source.reshape(()))
    updates = source if alpha == 1 else ops.mul(source, alpha)
    front = ops.moveaxis(input, dim, 0)
    positions = ops.where(index < 0, index + size, index).reshape(-1, 1)
    result = ops.moveaxis(ops.tensor_scatter_add(front, positions, ops.moveaxis(updates, dim, 0)), 0, dim)
    if out is not None:
        out.copy_(result)
        return out
    return result


def tensor_index_add(self: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Any:
    """``Tensor.index_add``: :func:`index_add` of ``self``."""
    return index_add(self, dim, index, source, alpha=alpha)


def tensor_index_add_(self: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Any:
    """``Tensor.index_add_``: :func:`index_add` written into ``self`` (InplaceIndexAddExt has no CPU kernel)."""
    from mindspeed_ms.compat.inplace import write_back
    from mindspeed_ms.compat.inplace_checks import check_leaf, check_no_internal_overlap, check_no_partial_overlap

    check_leaf("index_add_", self)
    check_no_internal_overlap("index_add_", self)
    check_no_partial_overlap("index_add_", self, source)
    return write_back("index_add_", self, index_add(self, dim, index, source, alpha=alpha))


def embedding(input: Any, weight: Any, padding_idx: Any = None, max_norm: Any = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Any:
    """``F.embedding``: rows of ``weight``; the ``padding_idx`` row gets no gradient, as in PyTorch.

    MSAdapter gathers without looking at ``padding_idx``, so the padding row is trained. bfloat16 rows (megatron's
    ``--bf16``) are gathered in float32: the CPU Gather has no bfloat16 kernel.

    Raises:
        NotImplementedError: ``max_norm`` (renormalises ``weight`` in place), ``scale_grad_by_freq`` or
            ``sparse`` (not implemented here; PyTorch's semantics would be lost silently otherwise).
    """
    gather, cast, int64, int32, bfloat16 = _embedding_ops()
    if max_norm is not None or scale_grad_by_freq or sparse:
        for option, value in (("max_norm", max_norm is not None), ("scale_grad_by_freq", scale_grad_by_freq),
                              ("sparse", sparse)):
            if value:
                raise UnsupportedOpOptionError(
                    "torch.nn.functional.embedding", option,
                    "not implemented on MindSpore's CPU backend; leave it at its default (megatron does)")
    dtype = getattr(input, "_dtype", None)
    if dtype is not int64 and dtype is not int32:
        from mindspeed_ms.compat.inplace_checks import INTEGRAL, category

        if category(input) != INTEGRAL:
            raise TypeError(f"embedding: indices must be an integer tensor, got {input.dtype}")
    rows = int(weight.shape[0])
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % rows
    # bfloat16 rows: the CPU Gather has no bfloat16 kernel; gathered in float32 (exact both ways: a row is
    # selected, not computed) and cast back, so the gradient reaches the bfloat16 weight through the casts
    table = cast(weight, _float32()) if weight.dtype == bfloat16 else weight
    # int32 indices from the host: MindSpore's CPU Gather casts int64 ones in a kernel of its own
    output = gather(table, int32_indices(input, rows, "torch.nn.functional.embedding"), 0)
    if padding_idx is not None:
        import mindspore.ops as ops

        # The padding row's gradient is zero: its contribution reaches the output through a detached copy.
        padded = ops.expand_dims(input == padding_idx, -1)
        output = ops.where(padded, ops.stop_gradient(output), output)
    return output if table is weight else cast(output, bfloat16)


@functools.lru_cache(maxsize=1)
def _embedding_ops() -> tuple[Any, Any, Any, Any, Any]:
    """(ops.gather, ops.cast, int64, int32, bfloat16): looked up once, not per call (two a training step)."""
    import mindspore
    import mindspore.ops as ops

    return ops.gather, ops.cast, mindspore.int64, mindspore.int32, mindspore.bfloat16


def _float32() -> Any:
    import mindspore

    return mindspore.float32


# --- assignment through views -----------------------------------------------------------------------------------


def _is_basic_index(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(part is None or part is Ellipsis or isinstance(part, slice)
               or (isinstance(part, int) and not isinstance(part, bool)) for part in parts)


def setitem_through_views_wrapper(setitem: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``t[index] = value`` write into ``t``'s memory, so its base and every view of it see the values.

    On MindSpore's CPU backend ``Tensor.__setitem__`` gives the tensor new memory (``b[...] = 1`` leaves a
    ``b.view(6)`` taken before unchanged) and, on a view, leaves the base unchanged for ``view``/``t()``/
    ``narrow`` views; a slice assignment into an int64 tensor keeps only the low 32 bits of the value
    (``flat[:1] = torch.tensor([2**40 + 5])`` stored 5). PyTorch writes into the existing memory.

    Basic indices (ints, slices, ``...``, ``None``) select a view of the memory: the value is copied into
    it with ``copy_`` (which writes through views on this backend). Advanced indices (masks, index
    tensors) are applied to a copy, which is then written back into the tensor. When autograd records the
    assignment (the tensor or the value requires grad, grad mode on), MindSpore's own assignment runs, so
    the gradient is right; a view's base then does not see the values (this backend cannot write through
    a view and rebase its history).

    Args:
        setitem: ``Tensor.__setitem__``.

    Returns:
        ``__setitem__`` that writes through views.
    """
    import mindspore

    from mindspeed_ms.compat.inplace import call_site, write_back
    from mindspeed_ms.compat.inplace_checks import records_grad
    from mindspeed_ms.compat.slice_copies import refuse_write
    from mindspeed_ms.compat.version_counter import bump_version

    @functools.wraps(setitem)
    def setitem_through_views(self: Any, index: Any, value: Any) -> None:
        refuse_write("__setitem__", self, call_site)  # a copy where PyTorch's piece is a view, or its input
        if records_grad(self) or records_grad(value):
            # MindSpore's assignment gives ``self`` a new tensor and counts no write in the counter a tensor saved
            # for a backward shares with ``self``: counted first, so that backward refuses it as PyTorch's does
            bump_version(self)
            setitem(self, index, value)
            return
        if _is_basic_index(index):
            if not hasattr(value, "dtype"):
                value = mindspore.tensor(value, dtype=self.dtype)
            self[index].copy_(value)
            return
        updated = self.clone()
        setitem(updated, index, value)
        write_back("__setitem__", self, updated)

    return setitem_through_views
