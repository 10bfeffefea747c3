"""Python floats combined with a float64 tensor, kept in float64 as PyTorch keeps them (every MindSpore device).

Measured on MindSpore 2.7.1 + MSAdapter 0.5.0b1 against torch 2.13 (tests/conformance/cases/ops_float64_scalars.py):
an op between a float64 tensor and a Python float rounds the float to float32 first, silently:
``float64_tensor + 0.1`` is 1.10000000149 (PyTorch 1.1), ``* 1e-300`` gives 0 and ``* 1e40`` inf (float32's range),
``== 0.1`` is False for a tensor holding 0.1, in every form (operators, reflected and in place, ``torch.add``/``mul``/
``div``/``pow``, the in-place methods, comparisons, ``clamp``'s bounds, ``addcmul``'s value). A float64 0-d tensor
operand is computed in float64. Also rounded: ``alpha=`` of add/sub (``torch.add(x64, y64, alpha=0.1)`` gave
``x + 0.10000000149 * y``) and ``torch.where``'s Python float next to a float64 tensor (``torch.where(c, x64, 0.1)``
held 0.10000000149); ``lerp`` of float64 raised a TypeError (MindSpore's Lerp has no float64 kernel).

Here, where the first argument is a float64 tensor (one attribute test, in C where the pass-through extension is
built: other dtypes never reach Python), each Python float argument becomes a float64 0-d tensor before the op runs:
PyTorch's promotion gives the same float64 result, now with the float's own value. A float ``alpha`` with a float64
first operand multiplies the other operand in float64 (PyTorch computes ``a + alpha * b`` in the result's dtype);
``torch.where`` widens a Python float when the other value is a float64 tensor; float64 ``lerp`` is PyTorch's CPU
formula (``start + w * (end - start)`` for ``|w| < 0.5``, else ``end - (end - start) * (1 - w)``) in float64
kernels, differentiable.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.engine import passthrough

__all__ = ["SCALAR_KEYWORDS", "float64_alpha", "float64_lerp_wrapper", "float64_lerp__wrapper",
           "float64_scalar_wrapper", "float64_where_wrapper"]

#: keyword arguments that may carry the Python float (``torch.add(x, other=0.1)``, ``clamp(min=, max=)``,
#: ``addcmul(value=)``, ``pow(exponent=)``)
SCALAR_KEYWORDS = frozenset(("other", "min", "max", "value", "exponent"))


def float64_scalar_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``op`` (first argument a tensor): Python floats become float64 0-d tensors when that tensor is float64."""
    import mindspore

    float64 = mindspore.float64

    def wide(value: Any) -> Any:
        return mindspore.Tensor(value, float64) if type(value) is float else value

    def widened(*args: Any, **kwargs: Any) -> Any:
        if not args or getattr(args[0], "dtype", None) != float64:
            return op(*args, **kwargs)
        args = (args[0], *(wide(value) for value in args[1:]))
        kwargs = {key: wide(value) if key in SCALAR_KEYWORDS else value for key, value in kwargs.items()}
        return op(*args, **kwargs)

    return passthrough.fork(op, widened, "_dtype", slow_when=float64)


def float64_alpha(op: Callable[..., Any], input: Any, other: Any, alpha: Any, out: Any) -> Any:
    """``op(input, other, alpha=alpha, out=out)`` (``torch.add``) with ``alpha`` applied in float64 when ``input`` is
    a float64 tensor and ``alpha`` a Python float; None otherwise (the caller runs ``op`` itself)."""
    import mindspore

    float64 = mindspore.float64
    if type(alpha) is not float or getattr(input, "dtype", None) != float64:
        return None
    if isinstance(other, mindspore.Tensor):
        if other.is_complex():
            return None
        scaled = other.to(float64) * mindspore.Tensor(alpha, float64)
    elif isinstance(other, (int, float)) and not isinstance(other, bool):
        scaled = mindspore.Tensor(other * alpha, float64)  # a Python (double) product, as PyTorch's scalar path
    else:
        return None
    return op(input, scaled) if out is None else op(input, scaled, out=out)


def float64_where_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.where(condition, input, other)``: a Python float next to a float64 tensor stays float64."""
    import mindspore

    float64 = mindspore.float64

    @functools.wraps(op)
    def where(condition: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 2 and not kwargs:
            first, second = args
            if type(second) is float and getattr(first, "dtype", None) == float64:
                second = mindspore.Tensor(second, float64)
            elif type(first) is float and getattr(second, "dtype", None) == float64:
                first = mindspore.Tensor(first, float64)
            return op(condition, first, second)
        return op(condition, *args, **kwargs)

    return where


def _lerp64(start: Any, end: Any, weight: Any) -> Any:
    """PyTorch's CPU lerp in float64 tensors (``weight`` a Python number or a tensor), recorded by autograd."""
    import mindspore
    from msadapter.ops import array

    float64 = mindspore.float64
    difference = end.to(float64) - start
    if not isinstance(weight, mindspore.Tensor):
        w = mindspore.Tensor(weight, float64)
        if abs(weight) < 0.5:
            return start + w * difference
        return end - difference * (1 - w)
    w = weight.to(float64)
    return array.where(w.abs() < 0.5, start + w * difference, end - difference * (1 - w))


def float64_lerp_wrapper(op: Callable[..., Any], in_place: bool = False) -> Callable[..., Any]:
    """Wrap ``torch.lerp``/``Tensor.lerp`` (``Tensor.lerp_`` with ``in_place``: the result written into ``start``):
    a float64 ``start`` takes PyTorch's formula in float64 (MindSpore's Lerp has no float64 kernel)."""
    import mindspore

    float64 = mindspore.float64

    def lerp(*args: Any, **kwargs: Any) -> Any:
        if len(args) != 3 or kwargs or getattr(args[0], "dtype", None) != float64 \
                or not isinstance(args[1], mindspore.Tensor) or args[1].dtype != float64:
            return op(*args, **kwargs)
        start, end, weight = args
        if isinstance(weight, mindspore.Tensor) and weight.dtype != float64:
            return op(*args, **kwargs)  # PyTorch refuses a weight of another dtype; MindSpore's refusal stands
        result = _lerp64(start, end, weight)
        if in_place:
            start.copy_(result)
            return start
        return result

    return passthrough.fork(op, lerp, "_dtype", slow_when=float64)


def float64_lerp__wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.lerp_``: :func:`float64_lerp_wrapper`, the result written into ``start``."""
    return float64_lerp_wrapper(op, in_place=True)
