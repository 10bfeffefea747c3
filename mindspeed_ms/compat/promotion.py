"""PyTorch's type promotion and dtype refusals for elementwise ops, on MindSpore through MSAdapter.

Measured against torch 2.13 (tests/conformance): MindSpore's kernels take integer and bool inputs to float
math as they come and fail ("Select CPU operator[Cos] fail! Unsupported data type!"), or compute in the
integer type (``exp2``), where PyTorch first promotes to the default float dtype; ``abs``/``relu``/``ceil`` on
bool run where PyTorch refuses; ``~`` is a logical not on every dtype (PyTorch: a bitwise not on integers,
a TypeError on floats); ``float16 tensor + 0-d float32 tensor`` is float32 (PyTorch: a 0-d tensor does not
raise a dimensioned tensor's dtype within its category, so float16); ``x - True`` runs where PyTorch refuses a
bool subtraction; ``3 & t`` raises (no reflected bit operators).

Each wrapper checks the operand dtypes in Python before any kernel (a failing kernel can switch MSAdapter's
autograd off) and adds a cast only when the dtypes call for one: on floating-point inputs the original runs
unchanged.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.errors import DTypeNotSupportedError, OperandTypeError
from mindspeed_ms.engine import passthrough

__all__ = ["DTypeNotSupportedError", "OperandTypeError", "FLOAT_MATH", "ROUNDING", "float_math_wrapper",
           "rounding_wrapper", "bool_refusing_wrapper", "sign_wrapper", "isinf_wrapper", "square_wrapper",
           "invert", "promoting_binary_wrapper", "reflected_bitwise", "result_dtype"]

#: unary ops PyTorch computes in the default float dtype for integer and bool inputs
FLOAT_MATH = ("exp", "log", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf", "expm1", "log1p", "log2", "exp2",
              "sinh", "cosh", "erfc", "erfinv", "atan", "asin", "acos")
#: unary ops that are the identity on integers and that PyTorch refuses on bool
ROUNDING = ("ceil", "floor", "round", "trunc")


@functools.cache
def _dtypes() -> tuple[frozenset[Any], frozenset[Any], Any]:
    """(integer dtypes, integer and bool dtypes, bool) of MindSpore."""
    import mindspore

    integers = frozenset((mindspore.int8, mindspore.int16, mindspore.int32, mindspore.int64, mindspore.uint8,
                          mindspore.uint16, mindspore.uint32, mindspore.uint64))
    return integers, integers | {mindspore.bool_}, mindspore.bool_


@functools.cache
def float_dtype_ids() -> frozenset[int]:
    """ids of MindSpore's floating dtypes: MindSpore's dtypes are singletons, and an identity test costs a fraction
    of ``==`` (~1 us against ~6 us per call): the fast path of every wrapper here."""
    import mindspore

    return frozenset(id(d) for d in (mindspore.float16, mindspore.bfloat16, mindspore.float32, mindspore.float64))


def _default_float() -> Any:
    import mindspore
    import torch

    dtype = torch.get_default_dtype()
    return dtype if dtype is not None else mindspore.float32


def _cast(tensor: Any, dtype: Any) -> Any:
    from mindspore import ops

    return ops.cast(tensor, dtype)


# --- unary ---------------------------------------------------------------------------------------------------


def float_math_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Promote integer and bool inputs of a float-valued unary op (``cos``, ``exp``, ...) to the default float
    dtype before the kernel, as PyTorch does (MindSpore's kernels refuse them or stay integral)."""
    exact = _dtypes()[1]

    floats = float_dtype_ids()

    @functools.wraps(op)
    def promoted(input: Any, *args: Any, **kwargs: Any) -> Any:
        dtype = getattr(input, "dtype", None)
        if id(dtype) not in floats and dtype in exact:
            input = _cast(input, _default_float())
        return op(input, *args, **kwargs)

    return promoted


def rounding_wrapper(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``ceil``/``floor``/``round``/``trunc``: a copy of an integer input (PyTorch: the identity, same dtype;
    MindSpore has no integer kernel), PyTorch's NotImplementedError on bool."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        integers, _, boolean = _dtypes()

        floats = float_dtype_ids()

        @functools.wraps(op)
        def rounded(input: Any, *args: Any, **kwargs: Any) -> Any:
            dtype = getattr(input, "dtype", None)
            if id(dtype) in floats:
                return op(input, *args, **kwargs)
            if dtype in integers and not args and not kwargs.get("decimals"):
                out = kwargs.get("out")
                result = input.copy()
                if out is not None:
                    out.copy_(result)
                    return out
                return result
            if dtype == boolean:
                raise DTypeNotSupportedError(f"torch.{name}", "Bool",
                                             f'"{name}_vml_cpu" not implemented for \'Bool\'')
            return op(input, *args, **kwargs)

        return rounded

    return wrapper


def bool_refusing_wrapper(name: str, message: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Refuse bool inputs with PyTorch's message (``abs``, ``relu``: MindSpore returns them unchanged)."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        boolean = _dtypes()[2]

        floats = float_dtype_ids()

        @functools.wraps(op)
        def refusing(input: Any, *args: Any, **kwargs: Any) -> Any:
            dtype = getattr(input, "dtype", None)
            if id(dtype) not in floats and dtype == boolean:
                raise DTypeNotSupportedError(name, "Bool", message)
            return op(input, *args, **kwargs)

        return refusing

    return wrapper


def sign_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``sign`` of a bool tensor is that tensor (PyTorch; MindSpore's Sign has no bool kernel)."""
    boolean = _dtypes()[2]

    @functools.wraps(op)
    def sign(input: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(input, "dtype", None) == boolean and not args and kwargs.get("out") is None:
            return input.copy()
        return op(input, *args, **kwargs)

    return sign


def isinf_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``isinf`` of a bool or integer tensor is all False (PyTorch; MindSpore's IsInf has no such kernels)."""
    import mindspore
    from mindspore import ops

    exact = _dtypes()[1]

    @functools.wraps(op)
    def isinf(input: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(input, "dtype", None) in exact and not args and not kwargs:
            return ops.zeros(tuple(input.shape), mindspore.bool_)
        return op(input, *args, **kwargs)

    return isinf


def square_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``square`` of a bool tensor is int64 (PyTorch; MindSpore's Square has no bool kernel)."""
    import mindspore

    boolean = _dtypes()[2]

    @functools.wraps(op)
    def square(input: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(input, "dtype", None) == boolean:
            input = _cast(input, mindspore.int64)
        return op(input, *args, **kwargs)

    return square


def invert(self: Any) -> Any:
    """``~tensor``: logical not of bool, bitwise not of integers, PyTorch's TypeError on floats.

    MindSpore's ``__invert__`` is a logical not whatever the dtype (``~tensor([1, -2])`` gave ``[False,
    False]``; PyTorch ``[-2, 1]``), and its BitwiseNot has no CPU kernel: two's complement gives ``~x = -x - 1``
    for signed integers, ``~x = max - x`` for unsigned ones.
    """
    import mindspore
    from mindspore import ops

    integers, _, boolean = _dtypes()
    dtype = self.dtype
    if dtype == boolean:
        return ops.logical_not(self)
    if dtype not in integers:
        raise OperandTypeError("Tensor.__invert__", "~ (operator.invert) is only implemented on integer and "
                                                    "Boolean-type tensors")
    if dtype in (mindspore.uint8, mindspore.uint16, mindspore.uint32, mindspore.uint64):
        bits = {mindspore.uint8: 8, mindspore.uint16: 16, mindspore.uint32: 32, mindspore.uint64: 64}[dtype]
        return ops.sub(mindspore.Tensor(2**bits - 1, dtype), self)
    return ops.sub(ops.neg(self), mindspore.Tensor(1, dtype))


# --- binary --------------------------------------------------------------------------------------------------


def result_dtype(a: Any, b: Any) -> Any:
    """PyTorch's result dtype of ``a op b`` for two tensors where exactly one is 0-d and the 0-d one's category
    does not exceed the other's: the dimensioned tensor's dtype. ``None`` where MindSpore already agrees
    (same dimensionality: plain promotion; a 0-d tensor of a higher category: promotion too)."""
    from mindspeed_ms.compat.inplace_checks import category

    a_zero, b_zero = len(a.shape) == 0, len(b.shape) == 0
    if a_zero == b_zero:
        return None
    dimensioned, zero = (b, a) if a_zero else (a, b)
    if category(zero) > category(dimensioned):
        return None
    return dimensioned.dtype


_SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
             "mask, use the `~` or `logical_not()` operator instead.")


def promoting_binary_wrapper(name: str, *, reflected: bool = False, true_division: bool = False,
                             subtraction: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give an arithmetic op PyTorch's result dtype when one tensor operand is 0-d (see :func:`result_dtype`)
    and PyTorch's refusal of bool subtraction.

    Args:
        name: the op, for messages (``"Tensor.__sub__"``).
        reflected: ``self`` is the right-hand operand (``__rsub__``).
        true_division: an integral result dtype becomes the default float dtype (``/``).
        subtraction: refuse bool operands, tensors and Python bools alike.
    """

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        from mindspore import Tensor

        boolean = _dtypes()[2]

        @functools.wraps(op)
        def promoted(self: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(other, Tensor) or not isinstance(self, Tensor):
                if subtraction and (type(other) is bool or getattr(self, "dtype", None) is boolean
                                    or getattr(other, "dtype", None) is boolean):
                    raise DTypeNotSupportedError(name, "Bool", _SUB_BOOL)
                return op(self, other, *args, **kwargs)
            own, their = self._dtype, other._dtype  # what ``dtype`` returns, without the property's Python frame
            if own is their:  # MindSpore's dtypes are singletons: the common case costs one identity test
                if subtraction and own is boolean:
                    raise DTypeNotSupportedError(name, "Bool", _SUB_BOOL)
                return op(self, other, *args, **kwargs)
            if subtraction and (own == boolean or their == boolean):
                raise DTypeNotSupportedError(name, "Bool", _SUB_BOOL)
            if own == their:
                return op(self, other, *args, **kwargs)
            wanted = result_dtype(other, self) if reflected else result_dtype(self, other)
            result = op(self, other, *args, **kwargs)
            if wanted is None:
                return result
            if true_division and wanted in _dtypes()[1] and kwargs.get("rounding_mode") is None:
                wanted = _default_float()
            return result if result.dtype == wanted else _cast(result, wanted)

        # two tensors of one dtype (the common case) go straight to ``op``, without the Python frame above where
        # mindspeed_ms.engine's C wrappers are built (bool subtraction still goes through it, and is refused)
        return passthrough.fork(op, promoted, "_dtype", cls=Tensor, unless=boolean if subtraction else None)

    return wrapper


def reflected_bitwise(name: str) -> Callable[[Any, Any], Any]:
    """``other OP self`` for ``&``, ``|``, ``^`` with a Python scalar on the left (absent under MSAdapter:
    ``3 & t`` raised TypeError); the operators are commutative."""

    def reflected(self: Any, other: Any) -> Any:
        return getattr(self, name)(other)

    reflected.__name__ = reflected.__qualname__ = name.replace("__", "__r", 1)
    reflected.__doc__ = f"``other {name}`` ``self``: ``self.{name}(other)`` (the operator is commutative)."
    return reflected
