"""bfloat16 elementwise ops on MindSpore's CPU backend, with PyTorch's result dtype.

MindSpore 2.7.1 has no bfloat16 CPU kernel for Identity (``clone``), Sub, FloorDiv, FloorMod, Pow, Maximum,
Minimum and most unary math (Exp, Log, Sqrt, Sigmoid, Tanh, Abs, Neg, Floor, Round, ...): each call raises
MindSpore's ``TypeError: Select CPU operator[...] fail!``. PyTorch's CPU bfloat16 elementwise kernels compute in
float32 and round once to bfloat16, so the operands are widened to float32, MindSpore's float32 op runs (with every
float32 repair stacked under this wrap), and the result is rounded back to bfloat16 (round to nearest even, as
PyTorch's). Casts are differentiable: a gradient flows back to the bfloat16 input in bfloat16.

The result stays float32 where PyTorch promotes: another floating operand of another dtype that has dimensions, or
that is 0-d like every bfloat16 operand (``bf16[3] - f32[3]`` is float32, ``bf16[3] - f32[]`` is bfloat16).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.engine import passthrough

__all__ = ["elementwise_wrapper", "nan_to_num_wrapper"]

#: bfloat16's largest finite value, what PyTorch's nan_to_num puts for +-inf by default
BFLOAT16_MAX = 3.3895313892515355e38


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _stays_bfloat16(operands: list[Any], bfloat16: Any, wider: tuple[Any, ...]) -> bool:
    """Whether PyTorch's promotion keeps a bfloat16 result: no floating operand of another dtype (``wider``) wins."""
    tensors = [value for value in operands if _is_tensor(value)]
    dimensioned = any(len(value.shape) > 0 for value in tensors if value.dtype == bfloat16)
    for value in tensors:
        if value.dtype not in wider:
            continue
        if len(value.shape) > 0 or not dimensioned:
            return False
    return True


def elementwise_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``op`` in float32 when its first argument is a bfloat16 tensor; round float32 results to bfloat16
    unless PyTorch's promotion makes them float32. A call with ``dtype=`` goes to ``op`` as it is."""
    import mindspore
    from mindspore import ops

    bfloat16, float32 = mindspore.bfloat16, mindspore.float32
    wider = (mindspore.float16, float32, mindspore.float64)

    def widen(value: Any) -> Any:
        if getattr(value, "dtype", None) == bfloat16 and hasattr(value, "shape"):
            return ops.cast(value, float32)
        return value

    def narrow(value: Any, back: bool) -> Any:
        if back and getattr(value, "dtype", None) == float32 and hasattr(value, "shape"):
            return ops.cast(value, bfloat16)
        return value

    @functools.wraps(op)
    def widened(input: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(input, "_dtype", None) is not bfloat16 or kwargs.get("dtype") is not None:
            return op(input, *args, **kwargs)
        back = _stays_bfloat16([input, *args, *kwargs.values()], bfloat16, wider)
        result = op(ops.cast(input, float32), *(widen(a) for a in args), **{k: widen(v) for k, v in kwargs.items()})
        if isinstance(result, tuple):
            return type(result)(narrow(r, back) for r in result)
        return narrow(result, back)

    # every call but a bfloat16 one goes straight to ``op`` (the C fork of mindspeed_ms.engine)
    return passthrough.fork(op, widened, "_dtype", slow_when=bfloat16)


def nan_to_num_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``nan_to_num`` of bfloat16: through float32 (:func:`elementwise_wrapper`), with bfloat16's largest finite
    value as the default for +-inf (PyTorch's; float32's would round to inf in bfloat16)."""
    import mindspore

    bfloat16 = mindspore.bfloat16
    widened = elementwise_wrapper(op)

    @functools.wraps(op)
    def nan_to_num(input: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None,
                   **kwargs: Any) -> Any:
        if getattr(input, "dtype", None) == bfloat16:
            posinf = BFLOAT16_MAX if posinf is None else posinf
            neginf = -BFLOAT16_MAX if neginf is None else neginf
        return widened(input, nan, posinf, neginf, **kwargs)

    return nan_to_num
