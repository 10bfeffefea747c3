"""A Python float next to a float64 tensor: PyTorch computes with the float's own value in float64 (MindSpore rounded
it to float32 first). Every form: operators, reflected, in place, the torch functions, the in-place methods,
comparisons, clamp's bounds, addcmul's value, pow; values whose float32 rounding shows (0.1, 1e-300, 1e40). Exact.
Also ``alpha=``, ``torch.where``'s Python float and float64 ``lerp`` (within 1e-15: PyTorch may fuse a multiply-add,
one rounding where a separate multiplication and addition make two; float32 rounding shows at ~1e-9)."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register


def _x(torch: Any) -> Any:
    return torch.tensor([1.0, 2.0, 0.1], dtype=torch.float64)


def _inplace(torch: Any, name: str, value: float) -> Any:
    x = _x(torch)
    returned = getattr(x, name)(value)
    return {"x": x, "same": returned is x}


CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "float64_python_float_operators": (("Tensor.__add__", "Tensor.__sub__", "Tensor.__mul__", "Tensor.__truediv__",
                                        "Tensor.__pow__"), lambda torch: {
        "add": _x(torch) + 0.1, "radd": 0.1 + _x(torch), "sub": _x(torch) - 0.1, "rsub": 0.1 - _x(torch),
        "mul": _x(torch) * 0.1, "rmul": 0.1 * _x(torch), "div": _x(torch) / 0.1, "rdiv": 0.1 / _x(torch),
        "pow": _x(torch) ** 0.1, "rpow": 0.1 ** _x(torch), "tiny": _x(torch) * 1e-300, "huge": _x(torch) * 1e40}),
    "float64_python_float_in_place": (("Tensor.__iadd__", "Tensor.__imul__", "Tensor.add_", "Tensor.sub_",
                                       "Tensor.mul_", "Tensor.div_"), lambda torch: {
        "iadd": _inplace(torch, "__iadd__", 0.1), "isub": _inplace(torch, "__isub__", 0.1),
        "imul": _inplace(torch, "__imul__", 0.1), "idiv": _inplace(torch, "__itruediv__", 0.1),
        "add_": _inplace(torch, "add_", 0.1), "sub_": _inplace(torch, "sub_", 0.1),
        "mul_": _inplace(torch, "mul_", 1e-300), "div_": _inplace(torch, "div_", 0.1)}),
    "float64_python_float_functions": (("torch.add", "torch.sub", "torch.mul", "torch.div", "torch.pow",
                                        "torch.clamp", "torch.addcmul"), lambda torch: {
        "add": torch.add(_x(torch), 0.1), "sub": torch.sub(_x(torch), 0.1), "mul": torch.mul(_x(torch), 0.1),
        "div": torch.div(_x(torch), 0.1), "pow": torch.pow(_x(torch), 0.1), "other_kw": torch.add(_x(torch), other=0.1),
        "clamp": torch.clamp(_x(torch), min=0.15, max=1.1), "clamp_method": _x(torch).clamp(0.15, 1.1),
        "addcmul": torch.addcmul(_x(torch), _x(torch), _x(torch), value=0.1)}),
    "float64_python_float_comparisons": (("Tensor.__eq__", "Tensor.__lt__", "torch.eq", "torch.ge"), lambda torch: {
        "eq": _x(torch) == 0.1, "ne": _x(torch) != 0.1, "lt": _x(torch) < 0.1, "le": _x(torch) <= 0.1,
        "gt": _x(torch) > 0.1, "ge": torch.ge(_x(torch), 0.1), "eq_fn": torch.eq(_x(torch), 0.1)}),
}

for _name, (_ops, _run) in CASES.items():
    register(__name__, _name, _ops, _run, exact=True)


def _lerp_grads(torch: Any, weight: Any) -> Any:
    start = torch.tensor([1.0, -2.0, 0.1], dtype=torch.float64, requires_grad=True)
    end = torch.tensor([3.0, 0.5, -0.7], dtype=torch.float64, requires_grad=True)
    out = torch.lerp(start, end, weight)
    (out * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    return {"out": out, "start": start.grad, "end": end.grad}


FUSED_CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "float64_alpha": (("torch.add", "torch.sub", "Tensor.add", "Tensor.sub_"), lambda torch: {
        "add": torch.add(_x(torch), _x(torch), alpha=0.1), "sub": torch.sub(_x(torch), _x(torch), alpha=0.1),
        "scalar_other": torch.add(_x(torch), 3, alpha=0.1), "float32_other": torch.add(
            _x(torch), torch.tensor([1.0, 2.0, 3.0]), alpha=0.1),
        "method": _x(torch).add(_x(torch), alpha=1e-300), "sub_": _inplace_alpha(torch),
        "out": torch.add(_x(torch), _x(torch), alpha=0.1, out=torch.zeros(3, dtype=torch.float64))}),
    "float64_where_python_float": (("torch.where", "Tensor.where"), lambda torch: {
        "other": torch.where(_x(torch) > 1, _x(torch), 0.1), "input": torch.where(_x(torch) > 1, 0.1, _x(torch)),
        "method": _x(torch).where(_x(torch) > 1, 1e-300)}),
    "float64_lerp": (("torch.lerp", "Tensor.lerp", "Tensor.lerp_"), lambda torch: {
        "small_weight": torch.lerp(_x(torch), _x(torch) * 3, 0.1), "large_weight": _x(torch).lerp(_x(torch) * 3, 0.7),
        "tensor_weight": torch.lerp(_x(torch), _x(torch) * 3, torch.tensor([0.1, 0.6, -0.3], dtype=torch.float64)),
        "in_place": _x(torch).lerp_(_x(torch) * 3, 0.1),
        "grads": _lerp_grads(torch, 0.3), "grads_large": _lerp_grads(torch, 0.8)}),
}


def _inplace_alpha(torch: Any) -> Any:
    x = _x(torch)
    returned = x.sub_(_x(torch) * 2, alpha=0.1)
    return {"x": x, "same": returned is x}


for _name, (_ops, _run) in FUSED_CASES.items():
    register(__name__, _name, _ops, _run, rtol=1e-15, atol=0.0)
