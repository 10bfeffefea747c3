"""Python floats combined with a float64 tensor, kept in float64 as PyTorch keeps them (every MindSpore device).

Measured on MindSpore 2.7.1 + MSAdapter 0.5.0b1 against torch 2.13 (tests/conformance/cases/ops_float64_scalars.py):
an op between a float64 tensor and a Python float rounds the float to float32 first, silently:
``float64_tensor + 0.1`` is 1.10000000149 (PyTorch 1.1), ``* 1e-300`` gives 0 and ``* 1e40`` inf (float32's range),
``== 0.1`` is False for a tensor holding 0.1, in every form (operators, reflected and in place, ``torch.add``/``mul``/
``div``/``pow``, the in-place methods, comparisons, ``clamp``'s bounds, ``addcmul``'s value). A float64 0-d tensor
operand is computed in float64. Not covered (still rounded): ``alpha=`` of add/sub (PyTorch fuses ``a + alpha * b``),
``torch.where``'s scalar (its first argument is the condition) and ``lerp``'s weight (MindSpore's Lerp has no
float64 kernel for a tensor weight).

Here, where the first argument is a float64 tensor (one attribute test, in C where the pass-through extension is
built: other dtypes never reach Python), each Python float argument becomes a float64 0-d tensor before the op runs:
PyTorch's promotion gives the same float64 result, now with the float's own value.
"""

from __future__ import annotations

from typing import Any, Callable

from mindspeed_ms.engine import passthrough

__all__ = ["SCALAR_KEYWORDS", "float64_scalar_wrapper"]

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
