"""float16 activations on MindSpore's CPU backend computed in float32 and rounded once, as PyTorch's CPU kernels do.

MindSpore 2.7.1 has float16 CPU kernels for Sigmoid and Softmax, but they compute in half precision: against
PyTorch (whose CPU kernels widen float16 to float32, its opmath type, and round the result once) 3545 of 11008
sigmoid values and 7664 of 11008 softmax values differed; ``F.silu``, which MSAdapter computes as
``x * sigmoid(x)`` on CPU, 4018 of 11008 (megatron's SwiGLU under ``--fp16``). Widening to float32 and rounding
back (round to nearest even) leaves the few values float32's own libm rounding differs on (5 of 11008, exp).
Gradients go through the casts: the float32 gradient is rounded once to float16, as PyTorch's backward kernels do.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.engine import passthrough

__all__ = ["via_float32_wrapper"]


def via_float32_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``op`` in float32 when its first argument is a float16 tensor; float32 results come back as float16.

    A call with ``dtype=`` goes to ``op`` as it is (the caller chose the result dtype); other dtypes go to ``op``
    untouched.
    """
    import mindspore
    from mindspore import ops

    float16, float32 = mindspore.float16, mindspore.float32

    def narrow(value: Any) -> Any:
        return ops.cast(value, float16) if getattr(value, "_dtype", None) is float32 else value

    @functools.wraps(op)
    def widened(input: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(input, "_dtype", None) is not float16 or kwargs.get("dtype") is not None:
            return op(input, *args, **kwargs)
        result = op(ops.cast(input, float32), *args, **kwargs)
        if isinstance(result, tuple):
            return type(result)(narrow(r) for r in result)
        return narrow(result)

    return passthrough.fork(op, widened, "_dtype", slow_when=float16)
