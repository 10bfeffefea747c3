"""bool and narrow integer inputs without a MindSpore CPU kernel (the OpInfo sweep's 'Unsupported data type' group;
cases in tests/conformance/cases/fix_integer_kernels.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13, each raising where PyTorch works:

- ``torch.max(x)``, ``x.min()``, ``torch.amax(x, dim)``, ``amin`` of a bool tensor: ``RuntimeError: Reduce does not
  support this kernel data type`` / ``Select CPU operator[ReduceMax] fail!``. PyTorch: a bool result (any/all).
  Computed in uint8 (exact for 0/1), the values cast back to bool; indices stay int64.
- ``torch.sign`` of uint8/int8/int16: ``TypeError: For Primitive Sign, the type of input must be in {Bool, Int32,
  ...}``. Computed in int32 (exact), cast back to the input's dtype (PyTorch keeps it).
- ``torch.logsumexp`` of bool/integer tensors: ``Exp``/``ReduceMax`` have no integer kernels. PyTorch promotes an
  integer input to the default float dtype (float32): the same here.
- ``torch.div(x, y, rounding_mode="trunc")`` / ``x.div(...)`` of int64/int16/bool: ``TypeError: Unsupported input
  data type for operator [Trunc]``. Computed as a floor division corrected toward zero (exact in integers; PyTorch's
  result dtype: bool promotes to int64); a zero divisor goes to the op (its ZeroDivisionError).

And one accepted refusal: ``argmax``/``argmin`` of a bool tensor returned an index; PyTorch raises ``RuntimeError:
argmax(): does not support bool input``. Now :class:`~mindspeed_ms.compat.errors.TorchRefusalError` (a RuntimeError)
with PyTorch's message.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.engine import passthrough

__all__ = ["bool_reduction_wrapper", "narrow_sign_wrapper", "integer_logsumexp_wrapper", "trunc_div_wrapper",
           "bool_arg_refusal_wrapper"]


def _cast_back(result: Any, wide: Any, narrow: Any) -> Any:
    """``result`` (a tensor, or a tuple of them: values and indices) with every ``wide`` tensor cast to ``narrow``."""
    from mindspore import ops

    if isinstance(result, tuple):
        items = tuple(_cast_back(item, wide, narrow) for item in result)
        if hasattr(result, "_fields"):  # a namedtuple
            return type(result)(*items)
        return items if type(result) is tuple else type(result)(items)  # a structseq (torch.return_types.max)
    if hasattr(result, "values") and hasattr(result, "indices") and not hasattr(result, "shape"):
        # MSAdapter's ReturnTypes (Tensor.max(dim) and the like): not a tuple, two attributes
        return type(result)((_cast_back(result.values, wide, narrow), result.indices))
    if getattr(result, "_dtype", None) is wide:
        return ops.cast(result, narrow)
    return result


def _cast_operand(value: Any, narrow: Any, wide: Any) -> Any:
    from mindspore import ops

    if getattr(value, "_dtype", None) is narrow and hasattr(value, "shape"):
        return ops.cast(value, wide)
    return value


def bool_reduction_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``max``/``min``/``amax``/``amin`` (function or method): a bool input computed in uint8, cast back."""
    import mindspore

    bool_, uint8 = mindspore.bool_, mindspore.uint8

    @functools.wraps(op)
    def in_uint8(input: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(input, "_dtype", None) is not bool_:
            return op(input, *args, **kwargs)
        result = op(_cast_operand(input, bool_, uint8), *(_cast_operand(a, bool_, uint8) for a in args),
                    **{k: _cast_operand(v, bool_, uint8) for k, v in kwargs.items()})
        return _cast_back(result, uint8, bool_)

    return passthrough.fork(op, in_uint8, "_dtype", slow_when=bool_)


def narrow_sign_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``sign``: a uint8/int8/int16 input computed in int32, cast back to its dtype."""
    import mindspore
    from mindspore import ops

    narrow = (mindspore.uint8, mindspore.int8, mindspore.int16)

    @functools.wraps(op)
    def in_int32(input: Any, *args: Any, **kwargs: Any) -> Any:
        dtype = getattr(input, "_dtype", None)
        if dtype not in narrow or kwargs.get("out") is not None:
            return op(input, *args, **kwargs)
        return ops.cast(op(ops.cast(input, mindspore.int32), *args, **kwargs), dtype)

    return in_int32


def integer_logsumexp_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``logsumexp(input, dim, keepdim=False)``: a bool or integer input promoted to float32 first (PyTorch's
    default float dtype; MindSpore has no integer Exp/ReduceMax CPU kernel)."""
    import mindspore
    from mindspore import ops

    integers = (mindspore.bool_, mindspore.uint8, mindspore.int8, mindspore.int16, mindspore.int32, mindspore.int64)

    @functools.wraps(op)
    def promoted(input: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(input, "_dtype", None) in integers:
            input = ops.cast(input, mindspore.float32)
        return op(input, *args, **kwargs)

    return promoted


def trunc_div_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``div(input, other, *, rounding_mode=None)``: ``rounding_mode="trunc"`` of an int64/int16/bool tensor by
    an integer (Python int or integer tensor) as a floor division corrected toward zero."""
    import mindspore
    from mindspore import ops

    failing = (mindspore.int64, mindspore.int16, mindspore.bool_)
    integers = (*failing, mindspore.uint8, mindspore.int8, mindspore.int32)

    def integral(value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int):
            return getattr(value, "_dtype", None) in integers and hasattr(value, "shape")
        return True

    @functools.wraps(op)
    def trunc_div(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        if (kwargs.get("rounding_mode") != "trunc" or args or set(kwargs) != {"rounding_mode"}
                or getattr(input, "_dtype", None) not in failing or not integral(other)
                or not bool((ops.cast(other, mindspore.int64) != 0).all() if hasattr(other, "shape") else other)):
            return op(input, other, *args, **kwargs)
        if input._dtype is mindspore.bool_:
            input = ops.cast(input, mindspore.int64)
        if getattr(other, "_dtype", None) is mindspore.bool_:
            other = ops.cast(other, mindspore.int64)
        floor = op(input, other, rounding_mode="floor")
        inexact = (floor * other) != input
        return ops.where(inexact & (floor < 0), floor + 1, floor)

    # every other dtype (float division on the training path) goes straight to ``op`` through C forks, no Python frame
    forked = op
    for dtype in failing:
        forked = passthrough.fork(forked, trunc_div, "_dtype", slow_when=dtype)
    return forked


def bool_arg_refusal_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``argmax``/``argmin`` (function or method): a bool input raises PyTorch's RuntimeError (typed)."""
    import mindspore

    from mindspeed_ms.compat.errors import TorchRefusalError

    name = getattr(op, "__name__", "argmax").strip("_")

    @functools.wraps(op)
    def refused(input: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(input, "_dtype", None) is mindspore.bool_:
            raise TorchRefusalError(f"torch.{name}", f"{name}(): does not support bool input (PyTorch refuses it: "
                                                     f"cast to an integer dtype first, e.g. x.long())")
        return op(input, *args, **kwargs)

    return passthrough.fork(op, refused, "_dtype", slow_when=mindspore.bool_)
