"""Binary elementwise ops and their operators (OpInfo style): same shape, broadcast, Python scalar on either side,
0-d tensors, float16, int64 (and int / int), bool, mixed-dtype promotion, empty, non-contiguous, gradients; the
result aliases neither input."""

from __future__ import annotations

import operator
from typing import Any, Callable

from conformance.samples import grad_of, noncontiguous, positive, register, tensor

# operator dunder -> (python operator, torch function, Tensor method, differentiable, takes float, takes bool)
BINARY: dict[str, tuple[Callable[[Any, Any], Any], str, str, bool, bool, bool]] = {
    "__add__": (operator.add, "add", "add", True, True, True),
    "__sub__": (operator.sub, "sub", "sub", True, True, False),
    "__mul__": (operator.mul, "mul", "mul", True, True, True),
    "__truediv__": (operator.truediv, "div", "div", True, True, True),
    "__floordiv__": (operator.floordiv, "floor_divide", "floor_divide", False, True, False),
    "__mod__": (operator.mod, "remainder", "remainder", False, True, False),
    "__pow__": (operator.pow, "pow", "pow", True, True, False),
    "__eq__": (operator.eq, "eq", "eq", False, True, True),
    "__ne__": (operator.ne, "ne", "ne", False, True, True),
    "__lt__": (operator.lt, "lt", "lt", False, True, False),
    "__le__": (operator.le, "le", "le", False, True, False),
    "__gt__": (operator.gt, "gt", "gt", False, True, False),
    "__ge__": (operator.ge, "ge", "ge", False, True, False),
    "__and__": (operator.and_, "bitwise_and", "bitwise_and", False, False, True),
    "__or__": (operator.or_, "bitwise_or", "bitwise_or", False, False, True),
    "__xor__": (operator.xor, "bitwise_xor", "bitwise_xor", False, False, True),
}


def _pair(torch: Any, name: str, shapes: tuple[tuple[int, ...], tuple[int, ...]], dtype: str, seed: int = 0) -> Any:
    low = 1 if name in ("__truediv__", "__floordiv__", "__mod__") else -3
    if dtype.startswith("float"):
        a = tensor(torch, shapes[0], dtype, seed, -2.0, 2.0) if name != "__pow__" else positive(torch, shapes[0],
                                                                                                 dtype, seed)
        b = tensor(torch, shapes[1], dtype, seed + 1, 0.5 if low == 1 else -2.0, 2.0)
        return a, b
    if dtype == "bool":
        return tensor(torch, shapes[0], "bool", seed), tensor(torch, shapes[1], "bool", seed + 1)
    a = tensor(torch, shapes[0], dtype, seed, -7, 7)
    b = tensor(torch, shapes[1], dtype, seed + 1, low if name != "__pow__" else 0, 4)
    return a, b


def _make(name: str, op: Callable[[Any, Any], Any], function: str, method: str, differentiable: bool,
          takes_float: bool, takes_bool: bool) -> None:
    dunder, fn = f"Tensor.{name}", f"torch.{function}"

    def variant(shapes: tuple[tuple[int, ...], tuple[int, ...]], dtype: str) -> Callable[[Any], Any]:
        def run(torch: Any) -> Any:
            a, b = _pair(torch, name, shapes, dtype)
            out = op(a, b)
            out.fill_(0) if out.numel() else None  # the result must alias neither input
            return {"out": op(a, b), "a": a, "b": b}
        return run

    main = "float32" if takes_float else "int64"
    register(__name__, f"{name}__{main}", (dunder,), variant(((2, 3), (2, 3)), main))
    register(__name__, f"{name}__broadcast", (dunder,), variant(((3, 1), (1, 4)), main))
    register(__name__, f"{name}__zero_dim_with_tensor", (dunder,), variant(((), (2, 3)), main))
    register(__name__, f"{name}__zero_dim_both", (dunder,), variant(((), ()), main))
    register(__name__, f"{name}__empty", (dunder,), variant(((0, 3), (1, 3)), main))
    if main != "int64":
        register(__name__, f"{name}__int64", (dunder,), variant(((2, 3), (2, 3)), "int64"))
    if takes_float:
        register(__name__, f"{name}__float16", (dunder,), variant(((2, 3), (2, 3)), "float16"))
    if takes_bool:
        register(__name__, f"{name}__bool", (dunder,), variant(((2, 3), (2, 3)), "bool"))

    def scalar_right(torch: Any) -> Any:
        a, _ = _pair(torch, name, ((2, 3), (1,)), main)
        scalars = [3, True] if not takes_float else [3, 2.5, True]
        return [op(a, s) for s in scalars]

    def scalar_left(torch: Any) -> Any:
        _, b = _pair(torch, name, ((1,), (2, 3)), main)
        return op(3, b)

    def int_tensor_float_scalar(torch: Any) -> Any:
        a, _ = _pair(torch, name, ((2, 3), (1,)), "int64")
        return op(a, 2.5)

    def promotion(torch: Any) -> Any:
        a, _ = _pair(torch, name, ((2, 3), (1,)), "int64")
        _, b = _pair(torch, name, ((1,), (2, 3)), "float32")
        c, _ = _pair(torch, name, ((2, 3), (1,)), "float16")
        return {"int64_float32": op(a, b), "float16_float32": op(c, b), "float16_0d_float32": op(c, b[0, 0]),
                "int64_0d_float": op(a, b[0, 0])}

    def non_contiguous(torch: Any) -> Any:
        a = noncontiguous(torch, (3, 4), main, seed=3, low=0.5, high=2.0)
        b = tensor(torch, (4, 3), main, seed=4, low=1, high=3).t()
        return op(a, b)

    def method_and_function(torch: Any) -> Any:
        a, b = _pair(torch, name, ((2, 3), (2, 3)), main)
        return {"method": getattr(a, method)(b), "function": getattr(torch, function)(a, b)}

    register(__name__, f"{name}__scalar_right", (dunder,), scalar_right)
    register(__name__, f"{name}__scalar_left", (f"Tensor.__r{name[2:]}" if name[2:4] not in ("eq", "ne", "lt", "le",
                                                "gt", "ge") else dunder,), scalar_left)
    register(__name__, f"{name}__non_contiguous", (dunder,), non_contiguous)
    register(__name__, f"{name}__method_and_function", (f"Tensor.{method}", fn), method_and_function)
    if takes_float:
        register(__name__, f"{name}__promotion", (dunder,), promotion)
        register(__name__, f"{name}__int_tensor_float_scalar", (dunder,), int_tensor_float_scalar)
    if differentiable:
        def gradient(torch: Any) -> Any:
            a, b = _pair(torch, name, ((2, 3), (1, 3)), "float32")
            return grad_of(torch, op, a, b)
        register(__name__, f"{name}__grad", (dunder,), gradient)


for _name, _spec in BINARY.items():
    _make(_name, *_spec)


def _matmul(torch: Any) -> Any:
    a, b = tensor(torch, (2, 3, 4), seed=1), tensor(torch, (4, 5), seed=2)
    v = tensor(torch, (4,), seed=3)
    return {"batched": a @ b, "fn": torch.matmul(a, b), "method": a.matmul(b), "vec": b.t() @ v,
            "grad": grad_of(torch, lambda x, y: x @ y, a, b)}


def _matmul_float16(torch: Any) -> Any:
    return tensor(torch, (3, 4), "float16") @ tensor(torch, (4, 2), "float16", seed=1)


def _matmul_int64(torch: Any) -> Any:
    return tensor(torch, (3, 4), "int64") @ tensor(torch, (4, 2), "int64", seed=1)


def _matmul_bfloat16(torch: Any) -> Any:
    return torch.matmul(tensor(torch, (3, 4), "bfloat16"), tensor(torch, (4, 2), "bfloat16", seed=1))


def _matmul_shape_mismatch(torch: Any) -> Any:
    return tensor(torch, (3, 4)) @ tensor(torch, (3, 4))


register(__name__, "matmul__float32", ("Tensor.__matmul__", "torch.matmul", "Tensor.matmul"), _matmul)
register(__name__, "matmul__float16", ("Tensor.__matmul__",), _matmul_float16, rtol=1e-2, atol=1e-2)
register(__name__, "matmul__int64", ("Tensor.__matmul__",), _matmul_int64)
register(__name__, "matmul__bfloat16", ("torch.matmul",), _matmul_bfloat16)
register(__name__, "matmul__shape_mismatch_raises", ("Tensor.__matmul__",), _matmul_shape_mismatch)
