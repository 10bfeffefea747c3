"""PyTorch's result dtypes, identities and accumulation at the edges of reductions (tests/conformance/cases/
ops_special_reduce.py against torch 2.13).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1: ``prod`` over an empty dimension returns uninitialised memory
(PyTorch: 1); ``any``/``all`` of a float tensor return float32 (PyTorch: bool), count -0.0 as true and give True for
an empty ``any``; ``cumprod`` of an integer tensor keeps its dtype (PyTorch: int64, like cumsum); float16 ``cumsum``
accumulates in float16 (PyTorch: float32, rounded once per element, so 60000 + 60000 - 60000 is 60000 again, not
inf); the int64 ``sum`` goes through float64 (2**53 + 1 + 1 gave 2**53); ``clamp`` of an integer tensor with a float
bound stays integral (PyTorch: float32); ``isfinite``/``isinf``/``isnan`` of bfloat16 have no CPU kernel; a
comparison with a Python int past int64 (``t < 2**64``) raises RuntimeError (PyTorch: OverflowError).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.engine import passthrough

__all__ = ["empty_prod_wrapper", "truth_wrapper", "integer_cumprod_wrapper", "float32_cumsum_wrapper",
           "exact_int64_sum_wrapper", "bfloat16_check_wrapper", "integer_clamp_wrapper", "int_overflow_wrapper"]


def _shape(tensor: Any) -> tuple[int, ...]:
    return tuple(tensor.shape)


@functools.cache
def _integers() -> frozenset[Any]:
    import mindspore

    return frozenset((mindspore.bool_, mindspore.int8, mindspore.int16, mindspore.int32, mindspore.int64,
                      mindspore.uint8))


@functools.cache
def _floats() -> frozenset[Any]:
    import mindspore

    return frozenset((mindspore.float16, mindspore.float32, mindspore.float64, mindspore.bfloat16))


def _dims_keepdim(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, bool]:
    dim = args[0] if args else kwargs.get("dim")
    return dim, bool(args[1] if len(args) > 1 else kwargs.get("keepdim", False))


def empty_prod_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``prod`` of an empty tensor or over an empty dim: 1 (int64 for integer inputs, PyTorch)."""
    import mindspore

    @functools.wraps(op)
    def prod(input: Any, *args: Any, **kwargs: Any) -> Any:
        if 0 not in _shape(input):
            return op(input, *args, **kwargs)
        from mindspeed_ms.compat.reductions import empty_result

        dim, keepdim = _dims_keepdim(args, kwargs)
        dtype = kwargs.get("dtype") or (mindspore.int64 if input.dtype in _integers() else input.dtype)
        return empty_result(_shape(input), dim, keepdim, 1, dtype)

    return prod


def truth_wrapper(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``any``/``all`` of a float tensor: over ``input != 0`` (bool, -0.0 false; PyTorch), and of an empty tensor:
    False / True. Of a uint8 tensor the result is uint8, as PyTorch's (MindSpore's: bool)."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        import mindspore

        @functools.wraps(op)
        def truth(input: Any, *args: Any, **kwargs: Any) -> Any:
            if input.dtype == mindspore.bool_ and 0 not in _shape(input):
                return op(input, *args, **kwargs)
            result_dtype = mindspore.uint8 if input.dtype == mindspore.uint8 else mindspore.bool_
            if 0 in _shape(input):
                from mindspeed_ms.compat.reductions import empty_result

                dim, keepdim = _dims_keepdim(args, kwargs)
                return empty_result(_shape(input), dim, keepdim, name == "all", result_dtype)
            from mindspore import ops

            result = op(ops.not_equal(input, 0), *args, **kwargs)
            return result if result_dtype is mindspore.bool_ else result.to(result_dtype)

        return truth

    return wrapper


def integer_cumprod_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``cumprod`` of bool/integer tensors without ``dtype``: int64 (PyTorch)."""
    import mindspore

    @functools.wraps(op)
    def cumprod(input: Any, dim: int, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        if dtype is None and not args and input.dtype in _integers() and input.dtype != mindspore.int64:
            from mindspore import ops

            return op(ops.cast(input, mindspore.int64), dim, **kwargs)
        return op(input, dim, *args, **({"dtype": dtype} if dtype is not None else {}), **kwargs)

    return cumprod


def float32_cumsum_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``cumsum`` of float16/bfloat16 without ``dtype``: accumulated in float32, each element rounded once
    (PyTorch's CPU kernel)."""
    import mindspore

    halves = (mindspore.float16, mindspore.bfloat16)

    @functools.wraps(op)
    def cumsum(input: Any, dim: int, *args: Any, **kwargs: Any) -> Any:
        if input.dtype not in halves or args or kwargs.get("dtype") is not None or kwargs.get("out") is not None:
            return op(input, dim, *args, **kwargs)
        from mindspore import ops

        return ops.cast(op(ops.cast(input, mindspore.float32), dim, **kwargs), input.dtype)

    return cumsum


def exact_int64_sum_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``sum`` of int64 without ``dtype``: exact, wrapping past 2**63 (PyTorch); MindSpore's CPU ReduceSum rounds
    through float64 past 2**53. Summed by the exact int64 ``cumsum`` kernel, its last element kept."""
    import mindspore

    @functools.wraps(op)
    def summed(input: Any, *args: Any, **kwargs: Any) -> Any:
        if input.dtype != mindspore.int64 or 0 in _shape(input) or not _shape(input) or kwargs.get("dtype") \
                is not None or len(args) > 2 or set(kwargs) - {"dim", "keepdim"}:
            return op(input, *args, **kwargs)
        from mindspore import ops

        from mindspeed_ms.compat.reductions import normalized_dims, reduced_shape

        dim, keepdim = _dims_keepdim(args, kwargs)
        shape = _shape(input)
        dims = normalized_dims(len(shape), dim)
        kept = [d for d in range(len(shape)) if d not in dims]
        moved = ops.transpose(input, (*kept, *dims)).reshape(*(shape[d] for d in kept), -1)
        total = ops.cumsum(moved, -1)[..., -1]
        return total.reshape(reduced_shape(shape, dim, keepdim))

    # every sum but an int64 one goes straight to ``op`` (no Python frame where mindspeed_ms.engine's C wrappers
    # are built): megatron sums float tensors hundreds of times a step
    return passthrough.fork(op, summed, "_dtype", slow_when=mindspore.int64)


def bfloat16_check_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``isfinite``/``isinf``/``isnan`` of bfloat16: checked in float32 (exact: every bfloat16 is a float32)."""
    import mindspore

    @functools.wraps(op)
    def check(input: Any) -> Any:
        if getattr(input, "dtype", None) != mindspore.bfloat16:
            return op(input)
        from mindspore import ops

        return op(ops.cast(input, mindspore.float32))

    return check


def integer_clamp_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``clamp`` of a bool/integer tensor with a float bound: clamped in float32 (PyTorch's result type; MindSpore
    keeps the integer dtype and truncates the bound: clamp([1, 5, 9], max=4.5) gave [1, 4, 4])."""
    import mindspore

    @functools.wraps(op)
    def clamp(input: Any, min: Any = None, max: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        bounds = (min, max)
        if getattr(input, "dtype", None) in _integers() and any(
                isinstance(bound, float) or getattr(bound, "dtype", None) in _floats() for bound in bounds):
            from mindspore import ops

            floating = [bound.dtype for bound in bounds if getattr(bound, "dtype", None) in _floats()]
            input = ops.cast(input, floating[0] if floating else mindspore.float32)
        return op(input, min, max, **kwargs)

    return clamp


#: how MindSpore refuses a Python int that does not fit in int64
_INT_CAST = "Unable to cast Python instance of type <class 'int'> to C++ type"


def int_overflow_wrapper(op_name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Re-raise MindSpore's refusal of a Python int past int64 as PyTorch's OverflowError (an
    :class:`~mindspeed_ms.compat.errors.OpOverflowRefusedError`, still a RuntimeError); a C guard: nothing runs on a
    call that succeeds."""

    def refused(error: BaseException) -> Any:
        from mindspeed_ms.compat.msadapter import restore_grad_flag

        if _INT_CAST not in str(error):
            raise error
        restore_grad_flag()  # MindSpore's executor switched autograd off when the argument did not convert
        from mindspeed_ms.compat.errors import OpOverflowRefusedError

        raise OpOverflowRefusedError(op_name, error) from error

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        return passthrough.guard(op, catch=RuntimeError, on_error=refused)

    return wrapper
