"""Subnormal floats through mul, div, add, matmul, exp and sum (mindspeed_ms.compat.fp_mode): as inputs and as
results, in tensors of 8, 4096 and 65539 elements (the larger ones are split between MindSpore's pool threads and
the calling thread), float32 and float64, each case run three times (which thread runs a part changes from call to
call). PyTorch keeps subnormals; MindSpore's pool threads flushed them to zero (FTZ and DAZ): ``x * 1`` of 1.4e-45
was 0.0, ``0 / x`` nan, ``x / x`` nan, the sum of 65539 subnormals 0.0.

Exact (bit for bit) where PyTorch's result does not depend on rounding order (every op but the float32 sum of
unequal values: within 1e-5 relative, no absolute tolerance, so a flushed 0 is a divergence). Left out, found
here, not about the threads' mode: MindSpore's float32 Exp kernel gives 0.0 for every argument below about -87
(``exp(-87)`` is 1.6e-38, normal; ``exp(-100)`` 3.8e-44), with the mode fixed too; and a float64 tensor
combined with a Python float rounds the float to float32 first (``float64 + 0.1`` is 1.10000000149), so the
float64 cases combine tensors. So exp is checked with subnormal inputs only (a result of 1, flushed or not), and
the sums and 2-d products, which run on the calling thread (the host GEMM, the reductions), guard against a
regression there; ``bmm`` and the elementwise ops of 4096+ elements failed before the fix.
``torch.set_flush_denormal``: its return values, its refusal of a non-bool, and that ``False`` keeps subnormals.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.harness import case
from conformance.samples import register

#: the sizes: inline on the calling thread, and split between threads
SIZES = (8, 4096, 65539)
#: how often each op runs in one case (the thread a part runs on changes from call to call)
REPEATS = 3
#: float32 values: subnormal (both signs, the smallest, the largest), and the smallest normal
_F32 = (1.401298464324817e-45, -1.401298464324817e-45, 1e-39, -3e-40, 1.1754942106924411e-38,
        float(np.finfo(np.float32).tiny))
_F64 = (5e-324, -5e-324, 1e-310, -3e-311, 2.2250738585072009e-308, float(np.finfo(np.float64).tiny))


def _values(torch: Any, size: int, dtype: str) -> Any:
    base = np.array(_F32 if dtype == "float32" else _F64, dtype=dtype)
    return torch.from_numpy(np.resize(base, size).copy())


def _repeat(function: Any, *args: Any) -> list[Any]:
    return [function(*args) for _ in range(REPEATS)]


def _mul(size: int) -> Any:
    def run(torch: Any) -> Any:
        out = {}
        for dtype in ("float32", "float64"):
            x = _values(torch, size, dtype)
            normal = torch.full((size,), 1e-20 if dtype == "float32" else 1e-160, dtype=getattr(torch, dtype))
            out[dtype] = {"x_times_one": _repeat(lambda a: a * 1, x), "x_times_half": _repeat(lambda a: a.mul(0.5), x),
                          "x_times_x_sign": _repeat(lambda a: torch.mul(a, -a), x),
                          "normal_product_subnormal": _repeat(lambda a: a * a, normal)}
        return out

    return run


def _div(size: int) -> Any:
    def run(torch: Any) -> Any:
        out = {}
        for dtype in ("float32", "float64"):
            x = _values(torch, size, dtype)
            zeros = torch.zeros(size, dtype=getattr(torch, dtype))
            big = torch.full((size,), 1e-30 if dtype == "float32" else 1e-300, dtype=getattr(torch, dtype))
            out[dtype] = {"zero_by_x": _repeat(lambda a, b: a / b, zeros, x),
                          "x_by_x": _repeat(lambda a: torch.div(a, a), x),
                          "x_by_two": _repeat(lambda a: a / 2, x), "one_by_x": _repeat(lambda a: 1 / a, x),
                          "quotient_subnormal": _repeat(lambda a: a / 1e10, big)}
        return out

    return run


def _add(size: int) -> Any:
    def run(torch: Any) -> Any:
        out = {}
        for dtype in ("float32", "float64"):
            x = _values(torch, size, dtype)
            tiny = float(np.finfo(dtype).tiny)
            a = torch.full((size,), tiny * 1.5, dtype=getattr(torch, dtype))
            b = torch.full((size,), tiny, dtype=getattr(torch, dtype))  # a tensor: see the module's docstring
            out[dtype] = {"x_plus_x": _repeat(lambda a: a + a, x), "x_minus_x": _repeat(lambda a: torch.sub(a, a), x),
                          "difference_subnormal": _repeat(lambda p, q: p - q, a, b),
                          "x_plus_one": _repeat(lambda a: a + 1, x)}
        return out

    return run


for _size in SIZES:
    register(__name__, f"mul_{_size}", ("torch.mul", "Tensor.__mul__", "Tensor.mul"), _mul(_size), exact=True)
    register(__name__, f"div_{_size}", ("torch.div", "Tensor.__truediv__", "Tensor.__rtruediv__"), _div(_size),
             exact=True)
    register(__name__, f"add_{_size}", ("torch.add", "Tensor.__add__", "torch.sub", "Tensor.__sub__"), _add(_size),
             exact=True)


@case("torch.matmul", "Tensor.__matmul__", "torch.bmm", exact=True)
def matmul_keeps_subnormal_inputs_and_results(torch: Any) -> Any:
    out: dict[str, Any] = {}
    double = torch.eye(128) * 2  # no product rounds to a zero (whose sign a sum's order decides)
    for rows in (4, 512):
        x = _values(torch, rows * 128, "float32").reshape(rows, 128)
        normal = torch.full((rows, 128), 1e-20)
        out[str(rows)] = {"x_at_double_eye": _repeat(lambda a: a @ double, x),
                          "normal_at_normal": _repeat(lambda a: torch.matmul(a[:, :1], a[:1, :] * 1e-1), normal)}
    batched = _values(torch, 16 * 128 * 128, "float32").reshape(16, 128, 128)
    out["bmm"] = _repeat(lambda: torch.bmm(batched, double.expand(16, 128, 128)))
    return out


@case("torch.exp", "Tensor.exp", exact=True)
def exp_of_subnormals_is_one(torch: Any) -> Any:
    out = {}
    for size in SIZES:
        x = _values(torch, size, "float32")[:size - size % 6 or size]
        out[size] = _repeat(lambda a: torch.exp(a * 1e30), x)  # subnormals times 1e30: from -4e-15 to 1.2e-8
        out[f"{size}_subnormal"] = _repeat(lambda a: torch.exp(a).sub(1), x)  # exp(subnormal) is 1: 0 either way
    return out


@case("torch.sum", "Tensor.sum", exact=True)
def sum_of_subnormals(torch: Any) -> Any:
    out = {}
    for size in SIZES:
        smallest = torch.full((size,), 1.401298464324817e-45)  # each partial sum a multiple of it: exact
        out[size] = {"smallest": _repeat(lambda a: a.sum(), smallest), "method": _repeat(lambda a: a.sum(0), smallest)}
    return out


@case("torch.sum", rtol=1e-5, atol=0.0)
def sum_of_unequal_subnormals(torch: Any) -> Any:
    return {size: _repeat(lambda a: a.abs().sum(), _values(torch, size, "float32")[:size - size % 6]) for size in SIZES}


@case("torch.set_flush_denormal")
def set_flush_denormal_returns_true_and_false_keeps_subnormals(torch: Any) -> Any:
    off = torch.set_flush_denormal(False)
    x = _values(torch, 4096, "float32")
    return {"returned": off, "x_times_one": x * 1, "zero_by_x": torch.zeros(4096) / x}


@case("torch.set_flush_denormal")
def set_flush_denormal_true_returns_true(torch: Any) -> Any:
    try:
        on = torch.set_flush_denormal(True)
    finally:
        off = torch.set_flush_denormal(False)
    return [on, off]


@case("torch.set_flush_denormal")
def set_flush_denormal_refuses_an_int(torch: Any) -> Any:
    return torch.set_flush_denormal(1)


@case("torch.set_flush_denormal")
def set_flush_denormal_refuses_none(torch: Any) -> Any:
    return torch.set_flush_denormal(None)
