"""PyTorch's nan semantics where MindSpore's CPU kernels drop nan (tests/conformance/cases/ops_special_reduce.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13: ``max``/``min`` (whole tensor, over a dim,
binary), ``maximum``/``minimum``, ``amax``/``amin``, ``argmax``/``argmin`` and ``clamp`` skip nan (PyTorch: nan
propagates; the index of a row holding nan is its first nan's); ``softmax``/``log_softmax`` of a row whose maximum is
+-inf (all -inf, or a +inf) or that holds a nan give numbers (PyTorch: nan for the whole row); ``logsumexp`` of such
rows gives nan (PyTorch: -inf for all -inf, +inf with a +inf, nan with a nan); ``sort``/``argsort``/``topk`` put nan
among the numbers (PyTorch: nan is larger than +inf). Each fix leaves every value the kernel computed where no nan
or infinity is involved: each first reads its input on the host (NumPy: 0.2-0.35 ms for 512 x 2048 float32) and, without
a nan (an infinity for softmax/logsumexp), returns the kernel's result untouched.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

__all__ = ["nan_extreme_wrapper", "nan_arg_wrapper", "nan_amax_wrapper", "nan_clamp_wrapper",
           "nan_clamp__wrapper", "softmax_rows_wrapper", "logsumexp_wrapper", "nan_sort_wrapper", "nan_topk_wrapper"]


@functools.cache
def _floats() -> frozenset[Any]:
    import mindspore

    return frozenset((mindspore.float16, mindspore.float32, mindspore.float64, mindspore.bfloat16))


def _floating(value: Any) -> bool:
    return getattr(value, "dtype", None) in _floats() and hasattr(value, "shape")


def _numel(value: Any) -> int:
    return int(math.prod(tuple(value.shape)))


def _dim_arg(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, bool]:
    dim = args[0] if args else kwargs.get("dim")
    keepdim = args[1] if len(args) > 1 else kwargs.get("keepdim", False)
    return dim, bool(keepdim)


def _host(input: Any) -> Any:
    """``input``'s values as a NumPy array (bfloat16 through float32), read on the host: one pass over memory
    (~0.3 ms for megatron's 512 x 2048 float32) instead of MindSpore's isnan + any kernels (~10 ms on CPU)."""
    import mindspore
    import mindspore.ops as ops

    return (ops.cast(input, mindspore.float32) if input.dtype == mindspore.bfloat16 else input).asnumpy()


def _has_nan(input: Any) -> bool:
    import numpy as np

    # NumPy's min propagates nan: one pass, no temporary (0.17 ms for 512 x 2048 float32; isnan().any(): 0.23 ms)
    return _floating(input) and _numel(input) > 0 and bool(np.isnan(_host(input).min()))


def _all_finite(input: Any) -> bool:
    import numpy as np

    return not _floating(input) or _numel(input) == 0 or bool(np.isfinite(_host(input)).all())


def _isnan(input: Any) -> Any:
    import mindspore
    import mindspore.mint as mint
    import mindspore.ops as ops

    return mint.isnan(ops.cast(input, mindspore.float32) if input.dtype == mindspore.bfloat16 else input)


def _nan_rows(input: Any, dim: Any, keepdim: bool) -> tuple[Any, Any]:
    """(isnan(input), whether each reduced slice holds a nan) over ``dim`` (None: the whole tensor)."""
    import mindspore.mint as mint
    import mindspore.ops as ops

    flags = _isnan(input)
    return flags, (mint.any(flags) if dim is None else ops.any(flags, dim, keepdim))


def _first_nan(flags: Any, dim: Any, keepdim: bool) -> Any:
    import mindspore
    import mindspore.ops as ops

    as_int = ops.cast(flags, mindspore.int32)
    if dim is None:
        index = ops.argmax(as_int.reshape(-1), 0, False)
        if keepdim:
            index = index.reshape((1,) * len(tuple(flags.shape)))
    else:
        index = ops.argmax(as_int, dim, keepdim)
    return ops.cast(index, mindspore.int64)


def _with_nan(values: Any, rows: Any) -> Any:
    import mindspore
    import mindspore.ops as ops

    if values.dtype == mindspore.bfloat16:
        filled = ops.masked_fill(ops.cast(values, mindspore.float32), rows, math.nan)
        return ops.cast(filled, mindspore.bfloat16)
    return ops.masked_fill(values, rows, math.nan)


def _with_zero(values: Any, rows: Any) -> Any:
    import mindspore
    import mindspore.ops as ops

    if values.dtype == mindspore.bfloat16:
        return ops.cast(ops.masked_fill(ops.cast(values, mindspore.float32), rows, 0.0), mindspore.bfloat16)
    return ops.masked_fill(values, rows, 0.0)


def _copy_out(result: Any, out: Any) -> Any:
    if out is None:
        return result
    if isinstance(out, (tuple, list)):
        for target, value in zip(out, result):
            target.copy_(value)
        return out
    out.copy_(result)
    return out


def nan_extreme_wrapper(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``max``/``min`` (``torch.*`` and ``Tensor.*``): a reduced slice holding nan gives nan and its first nan's
    index; ``max(a, b)`` is nan where either is (MindSpore's kernels skip nan)."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def extreme(input: Any, *args: Any, **kwargs: Any) -> Any:
            other = args[0] if args and hasattr(args[0], "shape") else kwargs.get("other")
            out = kwargs.pop("out", None)
            result = _bfloat16_via_float32(op, input, other, args, kwargs)
            if other is not None:
                return _copy_out(_binary_nan(input, other, result), out)
            if not _has_nan(input):  # the common case: the kernel's result as it is
                return _copy_out(result, out)
            dim, keepdim = _dim_arg(args, kwargs)
            flags, rows = _nan_rows(input, dim, keepdim)
            if dim is None:
                return _copy_out(_with_nan(result, rows), out)
            values, indices = result
            from mindspore import mint

            fixed = type(result)((_with_nan(values, rows), mint.where(rows, _first_nan(flags, dim, keepdim),
                                                                      indices)))
            return _copy_out(fixed, out)

        return extreme

    return wrapper


def _bfloat16_via_float32(op: Callable[..., Any], input: Any, other: Any, args: tuple[Any, ...],
                          kwargs: dict[str, Any]) -> Any:
    """``op(input, *args, **kwargs)``; a bfloat16 reduction (MinDim and ReduceMin have no bfloat16 CPU kernel) in
    float32, the values cast back (exact: max/min pick one of the inputs)."""
    import mindspore
    import mindspore.ops as ops

    if input.dtype != mindspore.bfloat16 or other is not None:
        return op(input, *args, **kwargs)
    result = op(ops.cast(input, mindspore.float32), *args, **kwargs)
    if isinstance(result, tuple):
        return type(result)((ops.cast(result[0], mindspore.bfloat16), result[1]))
    return ops.cast(result, mindspore.bfloat16)


def nan_arg_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``argmax``/``argmin``: the first nan's index where the reduced slice holds one (PyTorch)."""

    @functools.wraps(op)
    def arg(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
        result = op(input, dim, keepdim)
        if not _has_nan(input):
            return result
        from mindspore import mint

        flags, rows = _nan_rows(input, dim, keepdim)
        return mint.where(rows, _first_nan(flags, dim, keepdim), result)

    return arg


def nan_amax_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``amax``/``amin``: nan where the reduced slice holds one (PyTorch)."""

    @functools.wraps(op)
    def amax(input: Any, dim: Any = (), keepdim: bool = False) -> Any:
        result = op(input, dim, keepdim)
        if not _has_nan(input):
            return result
        _, rows = _nan_rows(input, None if dim in ((), [], None) else dim, keepdim)
        return _with_nan(result, rows)

    return amax


def _binary_nan(input: Any, other: Any, result: Any) -> Any:
    from mindspore import mint

    if not _floating(result) or not (_has_nan(input) or _has_nan(other)):
        return result
    flags = _isnan(input) if _floating(input) else None
    if _floating(other):
        flags = _isnan(other) if flags is None else mint.logical_or(flags, _isnan(other))
    return _with_nan(result, flags)


def _clamped(clamp: Callable[..., Any], input: Any, min: Any, max: Any) -> Any:  # noqa: A002
    if not _floating(input) and any(isinstance(bound, float) or _floating(bound) for bound in (min, max)):
        import mindspore
        import mindspore.ops as ops

        # PyTorch promotes an integer tensor clamped by a float bound (result_type: float32)
        floating = [bound.dtype for bound in (min, max) if _floating(bound)]
        input = ops.cast(input, floating[0] if floating else mindspore.float32)
    result = clamp(input, min, max)
    if not _floating(result) or not _has_nan(input):
        return result
    return _with_nan(result, _isnan(input))


def nan_clamp_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``clamp``/``clip``: a nan input stays nan (PyTorch; MindSpore's kernel clamps it to a bound)."""

    @functools.wraps(op)
    def clamp(input: Any, min: Any = None, max: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        out = kwargs.pop("out", None)
        return _copy_out(_clamped(lambda x, lo, hi: op(x, lo, hi, **kwargs), input, min, max), out)

    return clamp


def nan_clamp__wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.clamp_`` of a float tensor: clamped out of place (nan stays nan), written into ``self`` and its
    base (:func:`mindspeed_ms.compat.grad_clone.clamp_`'s way); other dtypes go to ``op``."""

    @functools.wraps(op)
    def clamp_(self: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - PyTorch's parameter names
        if not _floating(self):
            return op(self, min, max)
        import mindspore.ops as ops

        from mindspeed_ms.compat.inplace import write_back
        from mindspeed_ms.compat.inplace_checks import check_inplace

        check_inplace("clamp_", self, *(bound for bound in (min, max) if bound is not None))
        # a tensor autograd records: clamp a copy (MindSpore's clamp saves its input, which the write would
        # modify: its backward refuses; PyTorch's clamp_ of a non-leaf backpropagates)
        source = ops.deepcopy(self) if getattr(self, "requires_grad", False) else self
        return write_back("clamp_", self, _clamped(ops.clamp, source, min, max))

    return clamp_


def _rows_without_a_number(input: Any, dim: int) -> Any:
    """Whether each slice along ``dim`` has a maximum of +-inf or holds a nan (its softmax is nan in PyTorch)."""
    import mindspore
    import mindspore.mint as mint
    import mindspore.ops as ops

    if input.dtype == mindspore.bfloat16:
        input = ops.cast(input, mindspore.float32)
    top = mint.amax(input, dim, True)  # skips nan
    return mint.logical_or(mint.isinf(top), ops.any(mint.isnan(input), dim, True))


def _softmax_dim(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[0] if args else kwargs.get("dim")


def softmax_rows_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``softmax``/``log_softmax`` (``F.*``, ``torch.*``, ``Tensor.*``): nan for every element of a slice whose
    maximum is +-inf or that holds a nan (PyTorch subtracts the maximum: inf - inf is nan)."""

    @functools.wraps(op)
    def softmax(input: Any, *args: Any, **kwargs: Any) -> Any:
        dim = _softmax_dim(args, kwargs)
        ndim = len(tuple(getattr(input, "shape", ())))
        if not isinstance(dim, int) or not -ndim <= dim < max(ndim, 1) or not _floating(input) or \
                _numel(input) == 0:
            return op(input, *args, **kwargs)  # the op refuses a dim out of range under PyTorch's class
        if _all_finite(input):  # the common case: the kernel's values as they are
            return op(input, *args, **kwargs)
        bad = _rows_without_a_number(input, dim)
        # MindSpore's CPU kernel also spoils the other rows of a tensor holding +inf: those rows go in as zeros
        result = _with_nan(op(_with_zero(input, bad), *args, **kwargs), bad)
        return _nan_gradient(result, input, bad)

    return softmax


def _nan_gradient(result: Any, input: Any, rows: Any) -> Any:
    """``result`` (nan in ``rows``) whose gradient is nan in ``rows`` too, as PyTorch's softmax backward gives
    (``y * (g - sum(g * y))`` of a nan row; the masked fill alone passes 0): ``+ where(rows, input, 0) * mask``,
    with ``mask`` nan in ``rows`` and 0 elsewhere (forward: nan + nan in ``rows``, ``x + ±0.0 == x`` elsewhere)."""
    import mindspore
    import mindspore.mint as mint
    import mindspore.ops as ops

    if not getattr(input, "requires_grad", False):
        return result
    work = mindspore.float32 if result.dtype == mindspore.bfloat16 else result.dtype
    chosen = mint.where(rows, ops.cast(input, work), ops.zeros((), work))
    mask = ops.masked_fill(ops.zeros(tuple(rows.shape), work), rows, math.nan)
    return ops.cast(mint.add(ops.cast(result, work), mint.mul(chosen, mask)), result.dtype)


def logsumexp_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``logsumexp``: -inf for a slice of -inf only, +inf with a +inf, nan with a nan (PyTorch; MindSpore: nan)."""

    @functools.wraps(op)
    def logsumexp(input: Any, dim: Any, keepdim: bool = False, **kwargs: Any) -> Any:
        result = op(input, dim, keepdim, **kwargs)
        if _all_finite(input):
            return result
        import mindspore
        import mindspore.mint as mint
        import mindspore.ops as ops

        widened = ops.cast(input, mindspore.float32) if input.dtype == mindspore.bfloat16 else input
        top = ops.cast(mint.amax(widened, dim, keepdim), result.dtype)  # skips nan
        fixed = mint.where(mint.isinf(top), top, result)
        fixed = _with_nan(fixed, ops.any(mint.isnan(widened), dim, keepdim))
        from mindspeed_ms.compat import reduction_grad_edges

        # the selects' backward is 0 * MindSpore's nan: PyTorch's g * exp(x - result) instead
        return reduction_grad_edges.logsumexp_gradient(input, fixed, dim, keepdim)

    return logsumexp


def _host_order(input: Any, dim: int, descending: bool) -> Any:
    """int64 indices that sort ``input`` along ``dim`` as PyTorch does with nan in it: nan above +inf, equal
    values in their original order."""
    import mindspore
    import mindspore.ops as ops
    import numpy as np

    values = ops.cast(input, mindspore.float32) if input.dtype == mindspore.bfloat16 else input
    array = np.moveaxis(values.asnumpy(), dim, -1)
    nan = np.isnan(array)
    filled = np.where(nan, 0, array)
    keys = (-filled, ~nan) if descending else (filled, nan)
    order = np.lexsort(keys, axis=-1) if array.ndim else np.zeros((), np.int64)
    return mindspore.Tensor(np.ascontiguousarray(np.moveaxis(order, -1, dim)).astype(np.int64))


def _sorted(input: Any, dim: int, descending: bool, k: int | None = None) -> tuple[Any, Any]:
    from mindspore import mint

    ndim = len(tuple(input.shape))
    dim = dim % ndim if ndim else 0
    indices = _host_order(input, dim, descending)
    if k is not None:
        indices = indices.narrow(dim, 0, k)
    return mint.gather(input, dim, indices) if ndim else input, indices


def nan_sort_wrapper(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``sort``/``argsort`` of a float tensor holding nan: nan last (first when descending), ties stable."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def sort(input: Any, *args: Any, **kwargs: Any) -> Any:
            if not _has_nan(input):
                return op(input, *args, **kwargs)
            dim = args[0] if args else kwargs.get("dim", -1)
            descending = bool(args[1] if len(args) > 1 else kwargs.get("descending", False))
            values, indices = _sorted(input, dim, descending)
            if kind == "argsort":
                return indices
            from mindspeed_ms.compat.return_types import return_type

            return _copy_out(return_type("sort")((values, indices)), kwargs.get("out"))

        return sort

    return wrapper


def nan_topk_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``topk`` of a float tensor holding nan: nan is the largest value (PyTorch)."""

    @functools.wraps(op)
    def topk(input: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, **kwargs: Any) -> Any:
        if not _has_nan(input) or not 0 <= k <= (int(input.shape[dim]) if tuple(input.shape) else 1):
            return op(input, k, dim, largest, sorted, **kwargs)
        from mindspeed_ms.compat.return_types import return_type

        return _copy_out(return_type("topk")(_sorted(input, dim, largest, k)), kwargs.get("out"))

    return topk
