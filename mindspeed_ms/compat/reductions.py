"""PyTorch's reductions where MSAdapter's differ (tests/conformance/cases/ops_reduce.py against torch 2.13).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1: ``sum``/``mean`` over an empty dimension return
uninitialised memory (PyTorch: 0 and nan); ``mean`` of an integer tensor runs (PyTorch refuses it);
``count_nonzero`` counts in int32 and refuses bool; ``cumsum`` of bool/int is int32 (PyTorch: int64) and fails
on an empty tensor; ``argmax`` over an empty tensor fails; ``torch.norm(x, dim=d)`` with the default ``p='fro'``
raises ("ord mode can not be str for vectors"); ``torch.linalg.norm``/``vector_norm`` and ``torch.diff`` do
not exist (``msadapter/linalg`` ships ``__int__.py`` instead of ``__init__.py``); ``torch.equal`` returns a
tensor (PyTorch: a Python bool). Arguments are checked in Python before any kernel runs.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

__all__ = ["empty_sum_wrapper", "mean_wrapper", "count_nonzero", "tensor_count_nonzero", "cumsum_wrapper",
           "argmax_wrapper", "norm_wrapper", "vector_norm", "linalg_norm", "diff", "equal", "reduced_shape",
           "normalized_dims"]


def normalized_dims(ndim: int, dim: Any) -> tuple[int, ...]:
    """The dimensions a reduction over ``dim`` of an ``ndim``-d tensor covers: sorted, non-negative, no repeats.

    Args:
        ndim: the input's number of dimensions.
        dim: ``None``/``()``/``[]`` (all), an int or a sequence of ints (negative counts from the end).

    Returns:
        The dimensions, e.g. ``(0, 2)``; ``()`` for a 0-d input.

    Raises:
        IndexError: a dimension outside ``[-ndim, ndim - 1]`` (PyTorch's message).
    """
    if dim is None or dim == () or dim == []:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if ndim == 0:
        return ()
    for d in dims:
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
    return tuple(sorted({d % ndim for d in dims}))


def reduced_shape(shape: tuple[int, ...], dim: Any, keepdim: bool) -> tuple[int, ...]:
    """The shape of a reduction of ``shape`` over ``dim`` (None or ``()``: every dimension)."""
    dims = set(normalized_dims(len(shape), dim))
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dims)


def _is_integral(dtype: Any) -> bool:
    from mindspeed_ms.compat.inplace_checks import FLOATING, category

    return category(dtype) < FLOATING


def empty_result(shape: tuple[int, ...], dim: Any, keepdim: bool, value: float, dtype: Any) -> Any:
    """The reduction of an empty tensor of ``shape`` over ``dim``: ``value`` everywhere (0 for sums, nan for
    means), computed without the kernel (MindSpore's return uninitialised memory)."""
    return _full(reduced_shape(shape, dim, keepdim), value, dtype)


def _full(shape: tuple[int, ...], value: float, dtype: Any) -> Any:
    from mindspore import ops

    return ops.fill(dtype, shape, value)


def _shape(tensor: Any) -> tuple[int, ...]:
    """``tensor``'s shape as a plain tuple (MSAdapter's ``.shape`` builds a ``torch.Size``: ~10 us for ``0 in``)."""
    try:
        return tensor._shape  # type: ignore[no-any-return]
    except AttributeError:
        return tuple(tensor.shape)


def _reduction_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, bool, Any]:
    """(dim, keepdim, dtype) of ``sum``/``mean``'s ``(dim=None, keepdim=False, *, dtype=None)``."""
    dim = args[0] if args else kwargs.get("dim", kwargs.get("axis"))
    keepdim = args[1] if len(args) > 1 else kwargs.get("keepdim", False)
    dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
    return dim, bool(keepdim), dtype


@functools.cache
def _integral() -> frozenset[Any]:
    import mindspore

    return frozenset((mindspore.bool_, mindspore.int8, mindspore.int16, mindspore.int32, mindspore.int64,
                      mindspore.uint8, mindspore.uint16, mindspore.uint32, mindspore.uint64))


def empty_sum_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``sum`` over an empty tensor is 0 (PyTorch; MindSpore's kernel returns uninitialised memory)."""
    import mindspore

    @functools.wraps(op)
    def summed(input: Any, *args: Any, **kwargs: Any) -> Any:
        if 0 not in _shape(input):
            return op(input, *args, **kwargs)
        dim, keepdim, dtype = _reduction_args(args, kwargs)
        if dtype is None:
            dtype = mindspore.int64 if input.dtype in _integral() else input.dtype
        from mindspeed_ms.compat.reduction_grad_edges import empty_reduction_gradient

        return empty_reduction_gradient(input, _full(reduced_shape(tuple(input.shape), dim, keepdim), 0, dtype))

    return summed


def mean_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``mean``: PyTorch's refusal of integer inputs (without ``dtype``) and nan over an empty tensor."""
    from mindspeed_ms.compat.promotion import float_dtype_ids

    floats = float_dtype_ids()

    @functools.wraps(op)
    def mean(input: Any, *args: Any, **kwargs: Any) -> Any:
        empty = 0 in _shape(input)
        if not empty and id(input.dtype) in floats and len(args) < 3 and kwargs.get("dtype") is None:
            return op(input, *args, **kwargs)
        dim, keepdim, dtype = _reduction_args(args, kwargs)
        if dtype is None and input.dtype in _integral():
            from mindspeed_ms.compat.inplace_checks import pytorch_dtype_name
            from mindspeed_ms.compat.promotion import DTypeNotSupportedError

            name = pytorch_dtype_name(input.dtype)
            message = (f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                       f"complex dtype. Got: {name}")
            raise DTypeNotSupportedError("torch.mean", name, message)
        if empty:
            from mindspeed_ms.compat.reduction_grad_edges import empty_reduction_gradient

            return empty_reduction_gradient(input, _full(reduced_shape(tuple(input.shape), dim, keepdim), math.nan,
                                                         dtype if dtype is not None else input.dtype))
        from mindspore import ops

        # PyTorch casts the input to dtype first; MindSpore's mean(dtype=) casts the (integer) mean afterwards
        return op(ops.cast(input, dtype), dim, keepdim)

    return mean


def count_nonzero(input: Any, dim: Any = None) -> Any:
    """``torch.count_nonzero``: int64 counts, bool inputs counted too (MSAdapter: int32, bool refused)."""
    import mindspore
    from mindspore import ops

    shape = tuple(input.shape)
    if 0 in shape:
        return _full(reduced_shape(shape, dim, False), 0, mindspore.int64)
    flags = input if input.dtype == mindspore.bool_ else ops.not_equal(input, 0)
    counts = ops.cast(flags, mindspore.int64)
    dims = normalized_dims(len(shape), dim)
    return ops.sum(counts, dims) if dims else counts


def tensor_count_nonzero(self: Any, dim: Any = None) -> Any:
    """``Tensor.count_nonzero``: :func:`count_nonzero` of ``self``."""
    return count_nonzero(self, dim)


def cumsum_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``cumsum``: int64 for bool and integer inputs without ``dtype`` (MSAdapter: int32), an empty tensor
    for an empty input (MindSpore's kernel fails)."""
    import mindspore

    integers = (mindspore.bool_, mindspore.int8, mindspore.int16, mindspore.int32, mindspore.uint8)

    @functools.wraps(op)
    def cumsum(input: Any, dim: int, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        if dtype is None and not args and input.dtype in integers:
            dtype = mindspore.int64
        if 0 in input.shape:
            normalized_dims(len(input.shape), dim)
            return _full(tuple(input.shape), 0, dtype if dtype is not None else input.dtype)
        if dtype is not None and input.dtype != dtype:
            from mindspore import ops

            input = ops.cast(input, dtype)
        return op(input, dim, *args, **kwargs)

    return cumsum


def argmax_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``argmax`` over a dim of an empty tensor: an empty int64 result (PyTorch), or PyTorch's IndexError when
    the reduced dim is empty; MindSpore's kernel fails."""
    import mindspore

    @functools.wraps(op)
    def argmax(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
        shape = _shape(input)
        if 0 in shape:
            if dim is None or shape[normalized_dims(len(shape), dim)[0]] == 0:
                raise IndexError("argmax(): Expected reduction dim to be specified for input.numel() == 0."
                                 if dim is None else f"argmax(): Expected reduction dim {dim} to have non-zero size.")
            return _full(reduced_shape(shape, dim, keepdim), 0, mindspore.int64)
        return op(input, dim, keepdim)

    return argmax


# --- norms -----------------------------------------------------------------------------------------------------


def vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, out: Any = None,
                dtype: Any = None) -> Any:
    """``torch.linalg.vector_norm``: the ``ord``-norm over ``dim`` (all elements when None); float16/bfloat16
    accumulate in float32 as PyTorch does."""
    import mindspore
    from mindspore import mint, ops

    if _is_integral(x.dtype):
        from mindspeed_ms.compat.promotion import DTypeNotSupportedError

        raise DTypeNotSupportedError("torch.linalg.vector_norm", str(x.dtype), f"linalg.vector_norm: Expected a "
                                     f"floating point or complex tensor as input. Got {x.dtype}")
    if dtype is not None and x.dtype != dtype:
        x = ops.cast(x, dtype)
    result_dtype = x.dtype
    if x.dtype in (mindspore.float16, mindspore.bfloat16):
        x = ops.cast(x, mindspore.float32)
    dims = normalized_dims(len(x.shape), dim)
    if ord == 2:
        result = mint.sqrt(mint.sum(mint.mul(x, x), dims, keepdim)) if dims else mint.abs(x)
    elif ord in (math.inf, -math.inf):
        extreme = mint.amax if ord == math.inf else mint.amin
        result = extreme(mint.abs(x), dims, keepdim) if dims else mint.abs(x)
        if dims:  # amax/amin skip nan on CPU; PyTorch's norm is nan where a nan is reduced
            result = ops.masked_fill(result, ops.any(mint.isnan(x), dims, keepdim), math.nan)
    elif ord == 0:
        flags = ops.cast(ops.not_equal(x, 0), x.dtype)
        result = mint.sum(flags, dims, keepdim) if dims else flags
    elif ord == 1:
        result = mint.sum(mint.abs(x), dims, keepdim) if dims else mint.abs(x)
    else:
        powered = mint.pow(mint.abs(x), ord)
        result = mint.pow(mint.sum(powered, dims, keepdim) if dims else powered, 1.0 / ord)
    if result.dtype != result_dtype:
        result = ops.cast(result, result_dtype)
    if out is not None:
        out.copy_(result)
        return out
    return result


def norm_wrapper(norm: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.norm``: every ``p`` but ``'nuc'`` is a vector norm over ``dim`` (PyTorch: ``'fro'`` is the
    2-norm, a number the ``p``-norm, all elements when ``dim`` is None); MSAdapter refuses ``'fro'`` with a dim
    and computes matrix norms for numbers."""

    @functools.wraps(norm)
    def vector(input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
               dtype: Any = None) -> Any:
        if isinstance(p, str) and p != "fro":
            return norm(input, p, dim, keepdim, out=out, dtype=dtype)
        if isinstance(p, str) and dim is not None and not isinstance(dim, int) and len(tuple(dim)) > 2:
            raise RuntimeError(f"torch.norm: 'fro' norm takes at most 2 dims, got {tuple(dim)}")
        return vector_norm(input, 2 if isinstance(p, str) else p, dim, keepdim, out=out, dtype=dtype)

    return vector


def linalg_norm(A: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *, out: Any = None,
                dtype: Any = None) -> Any:
    """``torch.linalg.norm``: the vector 2-norm (``ord`` None, over ``dim`` or all elements), the Frobenius
    norm, a vector norm for a 1-d ``dim``, matrix norms (MindSpore's ``ops.norm``) for a 2-d one."""
    from mindspore import ops

    ndim = len(A.shape)
    if ord is None or ord == "fro" and (dim is None and ndim <= 2
                                       or dim is not None and len(normalized_dims(ndim, dim)) <= 2):
        return _patched_vector_norm(A, 2, dim, keepdim, out, dtype)
    vector = isinstance(dim, int) or (dim is not None and len(tuple(dim)) == 1) or (dim is None and ndim == 1)
    if vector and not isinstance(ord, str):
        return _patched_vector_norm(A, ord, dim, keepdim, out, dtype)
    result = ops.norm(A, ord, dim, keepdim, dtype=dtype)
    if out is not None:
        out.copy_(result)
        return out
    return result



def _patched_vector_norm(A: Any, ord: Any, dim: Any, keepdim: bool, out: Any, dtype: Any) -> Any:
    """``torch.linalg.vector_norm`` as installed (with its wrappers: a zero vector's gradient is 0, not nan)."""
    import msadapter.linalg

    extra = {name: value for name, value in (("out", out), ("dtype", dtype)) if value is not None}
    return msadapter.linalg.vector_norm(A, ord, dim, keepdim, **extra)

# --- diff, equal -----------------------------------------------------------------------------------------------


def diff(input: Any, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """``torch.diff`` (absent under MSAdapter): ``n``-th forward difference along ``dim``; bool: ``!=``."""
    import mindspore
    from mindspore import ops

    ndim = len(input.shape)
    if ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    dim = normalized_dims(ndim, dim)[0]
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:  # PyTorch: a copy of the input, prepend/append ignored
        return input.clone()
    parts = [t for t in (prepend, input, append) if t is not None]
    values = ops.cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        length = int(values.shape[dim])
        if length == 0:
            break
        later, earlier = values.narrow(dim, 1, length - 1), values.narrow(dim, 0, length - 1)
        values = ops.not_equal(later, earlier) if values.dtype == mindspore.bool_ else ops.sub(later, earlier)
    return values


def extreme_wrapper(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``max``/``min`` over a dim of an empty tensor: empty values and int64 indices (PyTorch), PyTorch's
    IndexError when the reduced dim is empty; MindSpore's MaxDim/MinDim refuse empty inputs."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        import mindspore

        @functools.wraps(op)
        def extreme(input: Any, *args: Any, **kwargs: Any) -> Any:
            shape = _shape(input)
            dim = args[0] if args else kwargs.get("dim")
            if 0 not in shape or not isinstance(dim, int) or isinstance(dim, bool):
                return op(input, *args, **kwargs)
            keepdim = bool(args[1] if len(args) > 1 else kwargs.get("keepdim", False))
            if shape[normalized_dims(len(shape), dim)[0]] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
            from mindspeed_ms.compat.return_types import return_type

            out = reduced_shape(shape, dim, keepdim)
            return return_type(name)((_full(out, 0, input.dtype), _full(out, 0, mindspore.int64)))

        return extreme

    return wrapper


def tensor_nonzero(self: Any, *, as_tuple: bool = False) -> Any:
    """``Tensor.nonzero``: the int64 ``[n, ndim]`` indices, or one index tensor per dim with ``as_tuple``
    (MSAdapter's method calls NonZeroExt, which has no CPU kernel)."""
    from mindspore import ops

    indices = ops.nonzero(self)
    if not as_tuple:
        return indices
    return tuple(indices[:, i] for i in range(max(1, len(self.shape))))


def equal(input: Any, other: Any) -> bool:
    """``torch.equal``: a Python bool (MSAdapter returns a 0-d tensor), True when shapes and values agree."""
    from mindspore import ops

    if tuple(input.shape) != tuple(other.shape):
        return False
    if 0 in tuple(input.shape):
        return True
    return bool(ops.equal(input, other).all())
