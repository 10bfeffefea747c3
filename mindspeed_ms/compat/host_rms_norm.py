"""``torch.nn.RMSNorm`` of float32 tensors computed on the host: one autograd Function instead of six MindSpore ops.

Megatron-LM's ``--normalization RMSNorm`` (every llama-style layout: MindSpeed-LLM's llama2, qwen, mixtral, deepseek)
builds :class:`~mindspeed_ms.compat.msadapter_nn.RMSNorm` per layer norm. Written with MSAdapter's ops it costs six
MindSpore kernels forward (pow, mean, add, rsqrt, mul, mul) and their gradients' backward, ~0.1-0.2 ms each on a
loaded 2-core machine: 27% of the forward of Megatron-LM's own ``pretrain_gpt.py`` at the tiny llama layout
(sampled, round 23). Here the arithmetic runs over the tensors' host memory
(:func:`~mindspeed_ms.compat.host_memory.host_array`) straight into new tensors' memory
(:func:`~mindspeed_ms.compat.host_outputs.new_float32`).

PyTorch's composite (``aten/src/ATen/native/layer_norm.cpp`` ``rms_norm``, float32): ``r = rsqrt(mean(x**2) + eps)``
per row, ``y = (x * r) * weight``; autograd's backward through those ops. Here: the mean of squares accumulates in
float64 and is rounded once to float32 (the float32 nearest the exact mean; PyTorch's float32 sum is within a few
units of it), ``r`` in float32, the products in float32 in PyTorch's order; backward ``gw = g * weight``,
``dx = r * gw + ((-0.5 * sum(gw * x)) * r**3 / n) * (2 * x)`` in float32 in autograd's order (``r**3`` of a huge
row reaches float32's subnormals as PyTorch's does), ``dweight = sum over rows of g * (x * r)``, the sums in float64
rounded once.
tests/test_compat_msadapter_nn.py compares both with the reference interpreter.

Taken where :func:`on_host` says so (on the CPU; ``MINDSPEED_MS_DISABLE=msadapter_cpu_kernels`` says no) and
:func:`takes` does: a float32 input, the weight None or a float32 tensor of the normalized shape. Half precision
goes through the module's MSAdapter ops (PyTorch upcasts those to float32 first).
"""

from __future__ import annotations

import functools
from typing import Any

from mindspeed_ms.compat.function_grads import host_function
from mindspeed_ms.compat.host_arithmetic import rms_norm_backward, rms_norm_forward
from mindspeed_ms.compat.host_layer_norm import kept_rows
from mindspeed_ms.compat.host_memory import host_array
from mindspeed_ms.compat.host_outputs import new_float32

__all__ = ["always", "on_host", "rms_norm", "rms_norm_backward", "rms_norm_forward", "takes"]


def on_host() -> bool:
    """Whether float32 RMSNorm runs here: no, unless the CPU kernels' provider (``msadapter_cpu_kernels``, registered
    only when MindSpore computes on the CPU) replaced this function by :func:`always`; reverting it says no again."""
    return False


def always() -> bool:
    """:func:`on_host`'s replacement on the CPU."""
    return True


def _forward(ctx: Any, input: Any, weight: Any, n: int, eps: float) -> Any:
    x = kept_rows(input, n)
    w = None if weight is None else host_array(weight, sync=False).reshape(n)
    result, out = new_float32(tuple(input._shape))
    r = rms_norm_forward(x, w, eps, out.reshape(x.shape))
    ctx.saved = (x, r, w, tuple(input._shape), None if weight is None else tuple(weight._shape))
    ctx.kept = (input, weight)  # the memory x and w read
    return result


def _backward(ctx: Any, grad: Any) -> Any:
    import numpy as np

    x, r, w, shape, weight_shape = ctx.saved
    result, out = new_float32(shape)
    weight_grad, weight_out = (None, None) if weight_shape is None else new_float32(weight_shape)
    rows = np.ascontiguousarray(host_array(grad)).reshape(x.shape)
    rms_norm_backward(rows, x, r, w, out.reshape(x.shape), None if weight_out is None else weight_out.reshape(-1))
    del ctx.saved, ctx.kept
    return result, weight_grad, None, None


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    return host_function("HostRMSNorm", "RMSNorm over the last ``n`` elements, forward and backward on the host.",
                         _forward, _backward)


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def takes(input: Any, weight: Any, normalized_shape: tuple[int, ...]) -> bool:
    """Whether :func:`rms_norm` computes this call: float32 ``input`` ending in ``normalized_shape``, ``weight`` None
    or float32 of that shape, nothing empty."""
    shape = getattr(input, "_shape", None)
    if shape is None or getattr(input, "_dtype", None) is not _float32() or not normalized_shape:
        return False
    if len(normalized_shape) > len(shape) or tuple(shape[len(shape) - len(normalized_shape):]) != normalized_shape:
        return False
    if any(size == 0 for size in shape):
        return False
    return weight is None or (getattr(weight, "_dtype", None) is _float32()
                              and tuple(getattr(weight, "_shape", ())) == normalized_shape)


def rms_norm(input: Any, weight: Any, n: int, eps: float) -> Any:
    """RMSNorm of a call :func:`takes` over the last ``n`` elements, through the host Function."""
    return _function().apply(input, weight, n, float(eps))
