"""Unary elementwise ops (OpInfo style): method and function forms, float32/float16/int64/bool where the op takes
them, 0-d, empty, non-contiguous, promotion of integer inputs, gradients; the input stays untouched."""

from __future__ import annotations

from typing import Any

from conformance.harness import data
from conformance.samples import grad_of, noncontiguous, positive, register, tensor

# name -> (input domain, integer inputs allowed, differentiable, bool inputs natural)
UNARY = {
    "exp": ("any", True, True, False), "log": ("positive", True, True, False),
    "sqrt": ("positive", True, True, False), "rsqrt": ("positive", True, True, False),
    "abs": ("any", True, True, True), "neg": ("any", True, True, True), "sin": ("any", True, True, False),
    "cos": ("any", True, True, False), "tanh": ("any", True, True, False), "sigmoid": ("any", True, True, False),
    "sign": ("any", True, False, True), "ceil": ("any", True, False, False), "trunc": ("any", True, False, False),
    "reciprocal": ("positive", True, True, False), "square": ("any", True, True, False),
    "erf": ("any", True, True, False), "expm1": ("any", True, True, False), "relu": ("any", True, True, True),
    "isnan": ("special", True, False, True), "isinf": ("special", True, False, True),
    "isfinite": ("special", True, False, True), "logical_not": ("any", True, False, True),
}


def _input(torch: Any, domain: str, shape: tuple[int, ...], dtype: str, seed: int = 0) -> Any:
    if domain == "positive":
        return positive(torch, shape, dtype, seed)
    if domain == "special" and dtype.startswith("float"):
        values = data(shape, dtype, seed)
        flat = values.reshape(-1)
        for index, special in enumerate((float("nan"), float("inf"), -float("inf"))[: flat.size]):
            flat[index] = special
        return torch.tensor(values)
    return tensor(torch, shape, dtype, seed)


def _make(name: str, domain: str, int_ok: bool, differentiable: bool, bool_ok: bool) -> None:
    def method_float32(torch: Any) -> Any:
        x = _input(torch, domain, (2, 3), "float32")
        y = getattr(x, name)()
        return {"y": y, "x": x}  # x as drawn: an op that writes its input shows here

    def function_float16(torch: Any) -> Any:
        return getattr(torch, name)(_input(torch, domain, (2, 3), "float16", seed=1))

    def zero_dim(torch: Any) -> Any:
        return getattr(torch, name)(_input(torch, domain, (), "float32", seed=2))

    def empty(torch: Any) -> Any:
        return getattr(torch, name)(_input(torch, domain, (0, 3), "float32"))

    def non_contiguous(torch: Any) -> Any:
        x = noncontiguous(torch, (3, 4), "float32", seed=3, low=0.25 if domain == "positive" else -2.0)
        return getattr(torch, name)(x)

    def int64(torch: Any) -> Any:
        return getattr(torch, name)(tensor(torch, (2, 3), "int64", seed=4, low=1 if domain == "positive" else -3,
                                           high=5))

    def boolean(torch: Any) -> Any:
        return getattr(torch, name)(tensor(torch, (2, 3), "bool", seed=5))

    def gradient(torch: Any) -> Any:
        return grad_of(torch, lambda x: getattr(torch, name)(x), _input(torch, domain, (2, 3), "float32", seed=6))

    method, function = f"Tensor.{name}", f"torch.{name}"
    register(__name__, f"{name}__method_float32", (method,), method_float32)
    register(__name__, f"{name}__float16", (function,), function_float16)
    register(__name__, f"{name}__zero_dim", (function,), zero_dim)
    register(__name__, f"{name}__empty", (function,), empty)
    register(__name__, f"{name}__non_contiguous", (function,), non_contiguous)
    if int_ok:
        register(__name__, f"{name}__int64", (function,), int64)
    if bool_ok:
        register(__name__, f"{name}__bool", (function,), boolean)
    if differentiable:
        register(__name__, f"{name}__grad", (function,), gradient)


for _name, (_domain, _int_ok, _differentiable, _bool_ok) in UNARY.items():
    _make(_name, _domain, _int_ok, _differentiable, _bool_ok)


def _invert(torch: Any) -> Any:
    return {"bool": ~tensor(torch, (2, 3), "bool"), "int64": ~tensor(torch, (2, 3), "int64", low=-5, high=5)}


def _invert_float(torch: Any) -> Any:
    return ~tensor(torch, (2, 3), "float32")


def _neg_operator(torch: Any) -> Any:
    x = tensor(torch, (2, 3), "float32")
    return {"float32": -x, "int64": -tensor(torch, (3,), "int64"), "grad": grad_of(torch, lambda t: -t, x)}


def _neg_bool(torch: Any) -> Any:
    return -tensor(torch, (3,), "bool")


def _pos_operator(torch: Any) -> Any:
    x = tensor(torch, (2, 3), "float32")
    return +x


register(__name__, "invert_operator", ("Tensor.__invert__",), _invert)
register(__name__, "invert_operator_float_raises", ("Tensor.__invert__",), _invert_float)
register(__name__, "neg_operator", ("Tensor.__neg__",), _neg_operator)
register(__name__, "neg_operator_bool_raises", ("Tensor.__neg__",), _neg_bool)
register(__name__, "pos_operator", ("Tensor.__pos__",), _pos_operator)
