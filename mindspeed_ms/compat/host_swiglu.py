"""megatron's SwiGLU (``--swiglu`` without the bias-SwiGLU fusion) of float32 as one autograd Function on the host.

megatron-core's ``MLP.forward`` (``megatron/core/transformer/mlp.py``) applies a gated linear unit to fc1's output
through a local function::

    def glu(x):
        x = torch.chunk(x, 2, dim=-1)
        return self.config.activation_func(x[0]) * x[1]

With ``activation_func`` SiLU that is SwiGLU, in every llama-style layout of Megatron-LM and MindSpeed-LLM. On
MindSpore's CPU backend the chunk (two strided views), the SiLU (:mod:`.host_silu`'s Function) and MindSpore's Mul
are three graph nodes with their own forward and backward dispatch, ~1.9 ms a call forward and backward at
Megatron-LM's tiny llama (``[32, 2, 344]``), 4 calls an iteration (~15% of its loop, sampled).

Here the three are one Function over the host memory: forward ``silu(a) * b`` (``a``, ``b`` the halves of the last
dimension; the SiLU as :func:`.host_silu.silu_forward`: PyTorch's ``x / (1 + exp(-x))``, then the float32 product);
backward as PyTorch's autograd runs it: ``grad_b = grad * silu(a)`` (the product's gradient for its second factor),
``grad_a = silu_backward(grad * b, a)`` (its gradient for the first factor through SiLU's backward formula), the
two written side by side as the chunk's backward concatenates them. The products and the concatenation are PyTorch's
bits; the SiLU's ``exp`` is NumPy's (as :mod:`.host_silu`'s: within an ulp or two of PyTorch's).

Taken (:func:`gated_plan`): megatron's own ``MLP.forward`` called with the hidden states alone, no bias-activation
fusion, a gated linear unit whose ``activation_func`` is ``torch.nn.functional.silu``; the glu's input (fc1's output
plus its bias) float32, with an even, non-empty last dimension and no empty dimension. fc1, the bias add and fc2 are
called as megatron calls them (the modules themselves: their hooks run). Everything else runs megatron's forward.
"""

from __future__ import annotations

import functools
from typing import Any

from mindspeed_ms.compat.function_grads import host_function
from mindspeed_ms.compat.host_arithmetic import swiglu_backward, swiglu_forward
from mindspeed_ms.compat.host_layer_norm import kept_rows
from mindspeed_ms.compat.host_memory import host_array
from mindspeed_ms.compat.host_outputs import new_float32

__all__ = ["gated_forward", "gated_plan", "swiglu"]


def _forward(ctx: Any, input: Any) -> Any:
    shape = tuple(input._shape)
    x = kept_rows(input, shape[-1])
    half = shape[-1] // 2
    result, out = new_float32((*shape[:-1], half))
    silu = swiglu_forward(x, out.reshape(-1, half))
    ctx.saved = (x, silu, shape)
    ctx.kept = input  # the memory x reads
    return result


def _backward(ctx: Any, grad: Any) -> Any:
    import numpy as np

    x, silu, shape = ctx.saved
    result, out = new_float32(shape)
    swiglu_backward(np.ascontiguousarray(host_array(grad)).reshape(silu.shape), x, silu, out.reshape(x.shape))
    del ctx.saved, ctx.kept
    return result


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    return host_function("HostSwiGLU", "silu(a) * b of x's halves, forward and backward on the host.", _forward,
                         _backward)


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def _plain(x: Any) -> bool:
    """Whether the glu's input ``x`` is one :func:`swiglu` takes: float32, no empty dimension, an even last one."""
    shape = getattr(x, "_shape", None)
    return (shape is not None and len(shape) > 0 and getattr(x, "_dtype", None) is _float32()
            and all(size > 0 for size in shape) and shape[-1] % 2 == 0)


def swiglu(x: Any) -> Any:
    """``silu(a) * b`` of ``x``'s two halves along the last dimension, one Function (``x`` as :func:`_plain` takes)."""
    return _function().apply(x)


def gated_plan(mlp: Any) -> bool:
    """Whether ``mlp``'s configuration is the SwiGLU :func:`gated_forward` computes (see the module's docstring)."""
    import torch

    config = mlp.config
    return (not config.bias_activation_fusion and config.gated_linear_unit
            and config.activation_func is torch.nn.functional.silu)


def gated_forward(mlp: Any, hidden_states: Any) -> Any:
    """megatron's ``MLP.forward(hidden_states)`` for a :func:`gated_plan` configuration: fc1, its bias, the glu as
    :func:`swiglu` where its input is plain (else megatron's chunk, SiLU and product), fc2."""
    import torch

    intermediate, bias = mlp.linear_fc1(hidden_states)
    if bias is not None:
        intermediate = intermediate + bias
    if _plain(intermediate):
        intermediate = swiglu(intermediate)
    else:
        halves = torch.chunk(intermediate, 2, dim=-1)
        intermediate = mlp.config.activation_func(halves[0]) * halves[1]
    return mlp.linear_fc2(intermediate)
