"""IEEE special values through the elementwise arithmetic ops: +0, -0, +inf, -inf, nan, the largest finite
(both signs), 1, -1, 3.5 and -0.25, every pair of them for the binary ops (both operands tensors, a Python scalar on
either side, a 0-d tensor operand, in place), each through function, method, operator and reflected operator;
float32, float16 and bfloat16 (where MindSpore has the CPU kernel); integer division by zero and int64 extremes.

Compared exactly where PyTorch is exact: every float tensor comes with the signs of its zeros (``-0.0`` vs ``+0.0``
is a divergence; the tolerance comparison alone would pass it), infinities must match with their signs and nans
sit at the same places (the driver's ``allclose``), and ``atol`` is the dtype's smallest normal number, so a zero
PyTorch gives must be a zero here. Subnormal numbers have their own family (``ops_subnormal.py``): MindSpore's
CPU thread pools flushed them to zero, a property of the threads rather than a special-value rule of one op.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from conformance.samples import register as _register


def register(module: str, name: str, ops: tuple[str, ...], function: Callable[[Any], Any],
             rtol: float | None = None, atol: float | None = None) -> None:
    """Register the case with the signs of the zeros of every float tensor it returns (see the docstring)."""
    if name.startswith(_ZERO_SIGN_OPEN):
        _register(module, name, ops, function, rtol, atol)
    else:
        _register(module, name, ops, lambda torch: _with_zero_signs(torch, function(torch)), rtol, atol)


def _with_zero_signs(torch: Any, value: Any) -> Any:
    """``value`` with each float tensor ``t`` as ``{"value": t, "signs": [±1.0 per element, 0.0 for a nan]}``:
    the tolerance comparison takes -0.0 for +0.0; these Python floats (signs read by ``math.copysign``, not by
    an op of the side) do not. A result flushed to zero keeps its sign, as IEEE's flush to zero does."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        flat = value.detach().float().reshape(-1).tolist()
        return {"value": value, "signs": [math.copysign(1.0, v) if v == v else 0.0 for v in flat]}
    if isinstance(value, dict):
        return {key: _with_zero_signs(torch, item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_with_zero_signs(torch, item) for item in value)
    return value

_INF = float("inf")


def _specials(dtype: str, modest: bool = False) -> list[float]:
    """The special values of ``dtype`` (bfloat16: its largest finite; the others are exact in every dtype)."""
    biggest = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0,
               "bfloat16": 3.3895313892515355e38}[dtype] if not modest else 65504.0
    return [0.0, -0.0, _INF, -_INF, float("nan"), biggest, -biggest, 1.0, -1.0, 3.5, -0.25]


#: the smallest normal number of each dtype: results below it may be flushed to zero (see the module docstring)
_TINY = {"float32": float(np.finfo(np.float32).tiny), "float16": float(np.finfo(np.float16).tiny),
         "bfloat16": float(np.finfo(np.float32).tiny)}


def _grid(torch: Any, dtype: str, modest: bool = False) -> tuple[Any, Any]:
    """Every ordered pair of special values: ``a[i], b[i]`` (contiguous, same shape); ``modest``: the largest
    finite replaced by float16's (see :data:`_MODEST`)."""
    values = np.array(_specials(dtype, modest), dtype=np.float32 if dtype == "bfloat16" else dtype)
    left, right = np.repeat(values, values.size), np.tile(values, values.size)
    a, b = torch.tensor(left), torch.tensor(right)
    if dtype == "bfloat16":
        a, b = a.to(torch.bfloat16), b.to(torch.bfloat16)
    return a, b


def _vector(torch: Any, dtype: str = "float32", modest: bool = False) -> Any:
    """The special values of ``dtype``, once each."""
    values = torch.tensor(np.array(_specials(dtype, modest), dtype=np.float32 if dtype == "bfloat16" else dtype))
    return values.to(torch.bfloat16) if dtype == "bfloat16" else values


#: float binary ops: name -> (ops named, callable(torch, a, b))
BINARY: dict[str, tuple[tuple[str, ...], Callable[[Any, Any, Any], Any]]] = {
    "add": (("Tensor.__add__",), lambda torch, a, b: a + b),
    "sub": (("Tensor.__sub__",), lambda torch, a, b: a - b),
    "mul": (("Tensor.__mul__",), lambda torch, a, b: a * b),
    "truediv": (("Tensor.__truediv__",), lambda torch, a, b: a / b),
    "div": (("torch.div",), lambda torch, a, b: torch.div(a, b)),
    "div_method": (("Tensor.div",), lambda torch, a, b: a.div(b)),
    "true_divide": (("torch.true_divide",), lambda torch, a, b: torch.true_divide(a, b)),
    "div_trunc": (("torch.div",), lambda torch, a, b: torch.div(a, b, rounding_mode="trunc")),
    "div_floor": (("torch.div",), lambda torch, a, b: torch.div(a, b, rounding_mode="floor")),
    "floordiv": (("Tensor.__floordiv__",), lambda torch, a, b: a // b),
    "mod": (("Tensor.__mod__",), lambda torch, a, b: a % b),
    "pow": (("Tensor.__pow__",), lambda torch, a, b: a ** b),
    "pow_function": (("torch.pow",), lambda torch, a, b: torch.pow(a, b)),
    "maximum": (("torch.maximum",), lambda torch, a, b: torch.maximum(a, b)),
    "minimum": (("torch.minimum",), lambda torch, a, b: torch.minimum(a, b)),
    "eq": (("Tensor.__eq__",), lambda torch, a, b: a == b),
    "ne": (("Tensor.__ne__",), lambda torch, a, b: a != b),
    "lt": (("Tensor.__lt__",), lambda torch, a, b: a < b),
    "le": (("Tensor.__le__",), lambda torch, a, b: a <= b),
    "gt": (("Tensor.__gt__",), lambda torch, a, b: a > b),
    "ge": (("Tensor.__ge__",), lambda torch, a, b: a >= b),
}

#: in-place forms: name -> (ops named, callable(torch, target, other) writing target)
INPLACE: dict[str, tuple[tuple[str, ...], Callable[[Any, Any, Any], Any]]] = {
    "iadd": (("Tensor.__iadd__",), lambda torch, t, b: operator.iadd(t, b)),
    "isub": (("Tensor.__isub__",), lambda torch, t, b: operator.isub(t, b)),
    "imul": (("Tensor.__imul__",), lambda torch, t, b: operator.imul(t, b)),
    "itruediv": (("Tensor.__itruediv__",), lambda torch, t, b: operator.itruediv(t, b)),
    "add_": (("Tensor.add_",), lambda torch, t, b: t.add_(b)),
    "sub_": (("Tensor.sub_",), lambda torch, t, b: t.sub_(b)),
    "mul_": (("Tensor.mul_",), lambda torch, t, b: t.mul_(b)),
    "div_": (("Tensor.div_",), lambda torch, t, b: t.div_(b)),
    "div_floor_": (("Tensor.div_",), lambda torch, t, b: t.div_(b, rounding_mode="floor")),
    "div_trunc_": (("Tensor.div_",), lambda torch, t, b: t.div_(b, rounding_mode="trunc")),
    "ifloordiv": (("Tensor.__ifloordiv__",), lambda torch, t, b: operator.ifloordiv(t, b)),
    "imod": (("Tensor.__imod__",), lambda torch, t, b: operator.imod(t, b)),
    "floor_divide_": (("Tensor.floor_divide_",), lambda torch, t, b: t.floor_divide_(b)),
    "remainder_": (("Tensor.remainder_",), lambda torch, t, b: t.remainder_(b)),
}
#: in-place forms over the largest finite float16 for the largest finite (see :data:`_MODEST`)
_INPLACE_MODEST = frozenset({"imod", "remainder_"})


#: remainders with the largest finite float32 as dividend over a small divisor (a quotient beyond float32's range)
#: differ between PyTorch's own loops (its vectorized fmod gives nan, its scalar one C's exact 0.0; MindSpore's
#: fmod gives ±inf): float16's largest finite there instead
_MODEST = frozenset({"mod"})
#: IEEE 754 leaves the sign of max(-0.0, +0.0) open, and PyTorch's vectorized and scalar loops pick differently
#: (maximum(tensor([0., -0.]), tensor(-0.)) is [0., -0.] for 2 elements, all -0. for 40): values only
_ZERO_SIGN_OPEN = ("maximum__", "minimum__")

#: binary ops without a bfloat16 CPU kernel (MindSpore's TypeError: a kernel gap, not a special-value question)
_NO_BFLOAT16_KERNEL = frozenset({"floordiv", "mod", "pow", "pow_function", "maximum", "minimum"})


def _binary(name: str, ops: tuple[str, ...], op: Callable[[Any, Any, Any], Any]) -> None:
    modest = name in _MODEST

    def grid(dtype: str) -> Callable[[Any], Any]:
        def run(torch: Any) -> Any:
            a, b = _grid(torch, dtype, modest)
            return op(torch, a, b)
        return run

    def scalar_right(torch: Any) -> Any:
        a = _vector(torch, modest=modest)
        return [op(torch, a, s) for s in _specials("float32", modest)]

    def zero_dim_right(torch: Any) -> Any:
        a = _vector(torch, modest=modest)
        return [op(torch, a, torch.tensor(s)) for s in _specials("float32", modest)]

    for dtype in ("float32", "float16", "bfloat16"):
        if dtype != "bfloat16" or name not in _NO_BFLOAT16_KERNEL:
            register(__name__, f"{name}__{dtype}", ops, grid(dtype), atol=_TINY[dtype])
    register(__name__, f"{name}__scalar_right", ops, scalar_right, atol=_TINY["float32"])
    register(__name__, f"{name}__zero_dim_right", ops, zero_dim_right, atol=_TINY["float32"])
    if name.isalpha() and name not in ("div", "maximum", "minimum"):  # an operator: also reflected
        def scalar_left(torch: Any) -> Any:
            b = _vector(torch, modest=modest)
            return [op(torch, s, b) for s in _specials("float32", modest)]
        reflected = f"Tensor.__r{ops[0].split('__')[1]}__" if name not in ("eq", "ne", "lt", "le", "gt", "ge") \
            else ops[0]
        register(__name__, f"{name}__scalar_left", (reflected,), scalar_left, atol=_TINY["float32"])


def _inplace(name: str, ops: tuple[str, ...], op: Callable[[Any, Any, Any], Any]) -> None:
    modest = name in _INPLACE_MODEST

    def run(torch: Any) -> Any:
        a, b = _grid(torch, "float32", modest)
        base = a.clone()
        view = base.view(len(_specials("float32")), -1)
        alias = op(torch, view, b.view(view.shape))
        return {"base": base, "returned": alias}

    def scalar(torch: Any) -> Any:
        outs = []
        for s in _specials("float32", modest):
            t = _vector(torch, modest=modest)
            op(torch, t, s)
            outs.append(t)
        return outs

    def bfloat16(torch: Any) -> Any:
        a, b = _grid(torch, "bfloat16")
        return op(torch, a, b)

    register(__name__, f"{name}__float32", ops, run, atol=_TINY["float32"])
    register(__name__, f"{name}__scalar", ops, scalar, atol=_TINY["float32"])
    if name in ("add_", "iadd", "mul_", "imul", "div_", "itruediv"):  # the others: no bfloat16 CPU kernel
        register(__name__, f"{name}__bfloat16", ops, bfloat16, atol=_TINY["float32"])


for _name, (_ops, _op) in BINARY.items():
    _binary(_name, _ops, _op)
for _name, (_ops, _op) in INPLACE.items():
    _inplace(_name, _ops, _op)


#: unary float ops: name -> (ops named, callable(torch, x))
UNARY: dict[str, tuple[tuple[str, ...], Callable[[Any, Any], Any]]] = {
    **{name: ((f"torch.{name}", f"Tensor.{name}"), (lambda n: lambda torch, x: {
        "function": getattr(torch, n)(x), "method": getattr(x, n)()})(name))
       for name in ("exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sign", "abs", "neg",
                    "sigmoid", "tanh", "erf", "erfinv", "floor", "ceil", "round", "trunc", "sin", "cos",
                    "square", "relu", "nan_to_num")},
    "neg_operator": (("Tensor.__neg__",), lambda torch, x: -x),
    "functional_sigmoid": (("torch.nn.functional.sigmoid",), lambda torch, x: torch.nn.functional.sigmoid(x)),
    "softplus": (("torch.nn.functional.softplus",), lambda torch, x: torch.nn.functional.softplus(x)),
    "clamp": (("torch.clamp", "Tensor.clamp"), lambda torch, x: {
        "both": torch.clamp(x, -2.0, 2.0), "min": x.clamp(min=0.0), "max": x.clamp(max=-0.0),
        "nan_min": torch.clamp(x, min=float("nan")), "nan_max": x.clamp(max=float("nan")),
        "inf": torch.clamp(x, -_INF, _INF)}),
    "clamp_tensor_bounds": (("torch.clamp",), lambda torch, x: torch.clamp(x, torch.zeros_like(x),
                                                                          torch.full_like(x, float("nan")))),
}

#: in-place unary forms the field calls
UNARY_INPLACE: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "abs_": (("Tensor.abs_",), lambda x: x.abs_()),
    "clamp_": (("Tensor.clamp_",), lambda x: x.clamp_(min=0.0, max=float("nan"))),
    "exp_": (("Tensor.exp_",), lambda x: x.exp_()),
}


def _unary(name: str, ops: tuple[str, ...], op: Callable[[Any, Any], Any]) -> None:
    def run(dtype: str) -> Callable[[Any], Any]:
        def go(torch: Any) -> Any:
            return op(torch, _vector(torch, dtype))
        return go

    for dtype in ("float32", "float16"):  # bfloat16: most unary ops have no CPU kernel (ops_bfloat16.py)
        register(__name__, f"unary_{name}__{dtype}", ops, run(dtype), atol=_TINY[dtype])


def _unary_inplace(name: str, ops: tuple[str, ...], op: Callable[[Any], Any]) -> None:
    def go(torch: Any) -> Any:
        base = _vector(torch)
        returned = op(base[1:])
        return {"base": base, "returned": returned}

    register(__name__, f"unary_{name}__float32", ops, go, atol=_TINY["float32"])


for _name, (_ops, _op) in UNARY.items():
    _unary(_name, _ops, _op)
for _name, (_ops, _inplace_op) in UNARY_INPLACE.items():
    _unary_inplace(_name, _ops, _inplace_op)

_I64_MIN, _I64_MAX = -2 ** 63, 2 ** 63 - 1


def _int_pair(torch: Any) -> tuple[Any, Any]:
    values = [0, 1, -1, 7, -7, _I64_MIN, _I64_MAX]
    return torch.tensor(values, dtype=torch.int64), torch.tensor(values[::-1], dtype=torch.int64)


INTEGER: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "int_floordiv_by_zero": (("Tensor.__floordiv__",), lambda torch: torch.tensor([5, -5]) // torch.tensor([0, 0])),
    "int_floordiv_by_zero_scalar": (("Tensor.__floordiv__",), lambda torch: torch.tensor([5, -5]) // 0),
    "int_mod_by_zero": (("Tensor.__mod__",), lambda torch: torch.tensor([5, -5]) % torch.tensor([0, 0])),
    "int_mod_by_zero_scalar": (("Tensor.__mod__",), lambda torch: torch.tensor([5, -5]) % 0),
    "int_div_trunc_by_zero": (("torch.div",), lambda torch: torch.div(torch.tensor([5, -5]), torch.tensor([0, 0]),
                                                                      rounding_mode="trunc")),
    "int_div_floor_by_zero": (("torch.div",), lambda torch: torch.div(torch.tensor([5, -5]), 0,
                                                                      rounding_mode="floor")),
    "int_floordiv__by_zero": (("Tensor.__ifloordiv__",), lambda torch: operator.ifloordiv(torch.tensor([5, -5]), 0)),
    "int_truediv_by_zero": (("Tensor.__truediv__",),
                            lambda torch: torch.tensor([5, -5, 0]) / torch.tensor([0, 0, 0])),
    "int_truediv_by_negative_zero_float": (("Tensor.__truediv__",), lambda torch: torch.tensor([5, -5, 0]) / -0.0),
    "int64_add_wraps": (("Tensor.__add__",), lambda torch: torch.tensor([_I64_MAX, _I64_MIN]) + torch.tensor([1, -1])),
    "int64_sub_wraps": (("Tensor.__sub__",), lambda torch: torch.tensor([_I64_MIN]) - 1),
    "int64_mul_wraps": (("Tensor.__mul__",), lambda torch: torch.tensor([_I64_MAX, _I64_MIN, 2 ** 40]) * 2 ** 40),
    "int64_extremes_grid": (("Tensor.__add__", "Tensor.__sub__", "Tensor.__mul__"), lambda torch: {
        "add": _int_pair(torch)[0] + _int_pair(torch)[1], "sub": _int_pair(torch)[0] - _int_pair(torch)[1],
        "mul": _int_pair(torch)[0] * _int_pair(torch)[1]}),
    "int64_min_floordiv_minus_one": (("Tensor.__floordiv__",), lambda torch: torch.tensor([_I64_MIN]) // -1),
    "int64_min_mod_minus_one": (("Tensor.__mod__",), lambda torch: torch.tensor([_I64_MIN, 7]) % -1),
    "int64_min_abs": (("torch.abs",), lambda torch: torch.abs(torch.tensor([_I64_MIN, _I64_MAX, -1]))),
    "int64_min_neg": (("Tensor.__neg__",), lambda torch: -torch.tensor([_I64_MIN, _I64_MAX])),
    "int64_extremes_compare": (("Tensor.__lt__", "torch.maximum"), lambda torch: {
        "lt": _int_pair(torch)[0] < _int_pair(torch)[1],
        "maximum": torch.maximum(*_int_pair(torch)), "minimum": torch.minimum(*_int_pair(torch))}),
    "int64_floordiv_signs": (("Tensor.__floordiv__", "Tensor.__mod__"), lambda torch: {
        "floordiv": torch.tensor([7, -7, 7, -7, _I64_MAX, _I64_MIN]) // torch.tensor([2, 2, -2, -2, -2, 3]),
        "mod": torch.tensor([7, -7, 7, -7, _I64_MAX, _I64_MIN]) % torch.tensor([2, 2, -2, -2, -2, 3])}),
    "int32_floordiv_by_zero": (("Tensor.__floordiv__",), lambda torch: torch.tensor([5], dtype=torch.int32)
                               // torch.tensor([0], dtype=torch.int32)),
}

for _name, (_ops, _integer_op) in INTEGER.items():
    register(__name__, _name, _ops, _integer_op)
