"""The msadapter_cpu provider's IEEE special values: division by zeros, nan and signed zeros, as PyTorch.

A private part of :mod:`mindspeed_ms.patches.msadapter_cpu` (its ``register`` calls :func:`register_ieee`);
tests/conformance/cases/ops_special_values.py compares each with real PyTorch.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_TENSOR = "mindspore.common.tensor.Tensor"
_POINTWISE = "msadapter.ops.pointwise"


def register_ieee(registry: Any) -> None:
    """Register PyTorch's division by a zero (compat/ieee_division.py, conformance/cases/ops_special_values.py)."""
    from mindspeed_ms.compat import ieee_division as ieee

    why = ("MindSpore's CPU division ignores the sign of a zero divisor (1 / -0.0 is +inf; PyTorch -inf) and gives "
           "nan / 0 as -inf (PyTorch nan), silently; integer division by zero returns a number (PyTorch raises "
           "RuntimeError: ZeroDivisionError)")
    for target, reflected in ((f"{_POINTWISE}.div", False), (f"{_TENSOR}.div", False),
                              (f"{_TENSOR}.__truediv__", False), (f"{_TENSOR}.__rtruediv__", True)):
        registry.register(target, ieee.division_wrapper(target.rpartition(".")[2], reflected), kind="wrap",
                          requires=_MSADAPTER, purpose=f"{target.rpartition('.')[2]}: {why}")
    for name, reflected, remainder in (("__floordiv__", False, False), ("__rfloordiv__", True, False),
                                       ("floor_divide", False, False), ("__mod__", False, True),
                                       ("__rmod__", True, True), ("remainder", False, True)):
        targets = [f"{_TENSOR}.{name}"] + ([f"{_POINTWISE}.{name}"] if "__" not in name else [])
        for target in targets:
            registry.register(target, ieee.floor_wrapper(name, reflected, remainder), kind="wrap",
                              requires=_MSADAPTER,
                              purpose=f"{name}: {why}; float {name} differs at infinities and signed zeros "
                                      f"(inf // 3 is inf, 1 % inf nan, -0.0 % 1 +0.0; PyTorch nan, 1.0, -0.0)")
    _register_ieee_special(registry)


def _register_ieee_special(registry: Any) -> None:
    """Register PyTorch's nan and signed zeros in clamp, maximum, relu... (compat/ieee_special.py)."""
    from mindspeed_ms.compat import ieee_special as special

    for name in ("maximum", "minimum"):
        for target in (f"msadapter.ops.comparison.{name}", f"{_TENSOR}.{name}"):
            registry.register(
                target, special.extremum_wrapper(name), kind="wrap", requires=_MSADAPTER,
                purpose=f"torch.{name} drops a nan operand ({name}(nan, 1) is 1; PyTorch nan) and accepts a Python "
                        f"number (PyTorch: TypeError)")
    for target in (f"{_POINTWISE}.clamp", f"{_TENSOR}.clamp"):
        registry.register(
            target, special.clamp_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="torch.clamp turns nan into a bound (clamp(nan, -2, 2) is -2; PyTorch nan) and a zero equal to "
                    "a zero bound into the bound's zero (clamp(-0.0, min=0.0) is +0.0; PyTorch -0.0)")
    registry.register(
        "msadapter.nn.functional.softplus", special.nan_keeping_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.softplus(nan) is inf (PyTorch nan)")
    for target in (f"{_POINTWISE}.relu", f"{_TENSOR}.relu", "msadapter.nn.functional.relu"):
        registry.register(
            target, special.relu_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="relu(nan) is 0 and relu(-0.0) is +0.0 (PyTorch nan and -0.0)")
    for name in ("expm1", "log1p"):
        for target in (f"{_POINTWISE}.{name}", f"{_TENSOR}.{name}"):
            registry.register(
                target, special.signed_zero_wrapper, kind="wrap", requires=_MSADAPTER,
                purpose=f"{name}(-0.0) is +0.0 (PyTorch and C: -0.0)")
