"""``torch.nn.functional.silu`` of float32 tensors computed on the host: one autograd Function per call.

MSAdapter's ``F.silu`` on the CPU is ``input * sigmoid(input)``: two MindSpore kernels forward, rounded twice, and
their gradients' kernels backward. Megatron's SwiGLU (``--swiglu``: every llama-style layout) calls it once per
layer and micro-batch; with the ``mul`` that follows it was 21% of the forward of Megatron-LM's ``pretrain_gpt.py``
at the tiny llama layout (sampled, round 23).

PyTorch's CPU kernels (``aten/src/ATen/native/cpu/Activation.cpp``), float32, here over the host memory
(:func:`~mindspeed_ms.compat.host_memory.host_array`) into new tensors' memory: forward ``x / (1 + exp(-x))``
(one rounding of the quotient, where MSAdapter's product rounded the sigmoid and the product); backward
``(dy * s) * (1 + x * (1 - s))`` with ``s = 1 / (1 + exp(-x))``. NumPy's ``exp`` and PyTorch's vectorised one may
differ in the last bit; tests/test_compat_host_silu.py compares with the reference interpreter.

Taken: a float32 input with no empty dimension, ``inplace`` false; everything else goes to the wrapped function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.function_grads import host_function
from mindspeed_ms.compat.host_arithmetic import silu_backward, silu_forward
from mindspeed_ms.compat.host_layer_norm import kept_rows
from mindspeed_ms.compat.host_memory import host_array
from mindspeed_ms.compat.host_outputs import new_float32

__all__ = ["silu_backward", "silu_forward", "silu_wrapper"]


def _forward(ctx: Any, input: Any) -> Any:
    shape = tuple(input._shape)
    x = kept_rows(input, shape[-1] if shape else 1)
    result, out = new_float32(shape)
    silu_forward(x, out.reshape(x.shape))
    ctx.saved = (x, shape)
    ctx.kept = input  # the memory x reads
    return result


def _backward(ctx: Any, grad: Any) -> Any:
    import numpy as np

    x, shape = ctx.saved
    result, out = new_float32(shape)
    silu_backward(np.ascontiguousarray(host_array(grad)).reshape(x.shape), x, out.reshape(x.shape))
    del ctx.saved, ctx.kept
    return result


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    return host_function("HostSiLU", "silu, forward and backward on the host.", _forward, _backward)


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def silu_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.silu(input, inplace=False)``: float32, not in place, through the host Function; else ``op``."""

    @functools.wraps(op)
    def silu(input: Any, inplace: Any = False) -> Any:
        shape = getattr(input, "_shape", None)
        if (inplace is False and shape is not None and getattr(input, "_dtype", None) is _float32()
                and all(size > 0 for size in shape)):
            return _function().apply(input)
        return op(input, inplace)

    return silu
