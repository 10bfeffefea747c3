"""Megatron's fused bias activations hand their bias a gradient of the activation's shape; reduced here.

``GeLUFunction`` (``fused_bias_gelu``: megatron's default ``--bias-gelu-fusion``), ``BiasSwiGLUFunction`` and
``BiasGeGLUFunction`` return the input's gradient for the bias too (``return tmp, tmp``: ``[s, b, ffn]`` for a
``[ffn]`` bias) and leave the reduction to PyTorch's autograd engine, which sums the gradient down to the input's
shape (``sum_to``). MindSpore's engine reduced it to one number, the sum of all its elements (a 0-d gradient for the
bias, broadcast into it: every element the same), silently, and the process died at exit (heap corruption):
Megatron-LM's own ``pretrain_gpt.py`` with the GPT-3-shaped model (scripts/real_megatron_lm_parity.sh layout ``gpt3``)
had a wrong ``linear_fc1.bias`` gradient; tests/test_compat_bias_gradients.py shows it with the Function alone. Here
the backward sums the bias's gradient over the leading dimensions itself, as ``sum_to`` does, so the engine receives
a gradient of the bias's own shape.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["summed_to", "bias_gradient_wrapper"]


def summed_to(grad: Any, shape: tuple[int, ...]) -> Any:
    """``grad`` summed down to ``shape`` (PyTorch's ``sum_to``: the leading dimensions, and dims of size 1 kept)."""
    extra = len(grad.shape) - len(shape)
    if extra < 0:
        return grad
    dims = tuple(range(extra)) + tuple(extra + i for i, n in enumerate(shape) if n == 1 and grad.shape[extra + i] != 1)
    if not dims:
        return grad
    return grad.sum(dim=dims, keepdim=True).reshape(shape) if extra == 0 else grad.sum(dim=dims).reshape(shape)


def bias_gradient_wrapper(backward: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``GeLUFunction.backward(ctx, grad_output)``: its second gradient (the bias's) summed to the bias's shape
    (``ctx.saved_tensors`` is ``(input, bias)``)."""

    @functools.wraps(backward)
    def reduced(ctx: Any, *grad_outputs: Any) -> Any:
        grads = backward(ctx, *grad_outputs)
        bias = ctx.saved_tensors[1]
        if bias is None or grads[1] is None or tuple(grads[1].shape) == tuple(bias.shape):
            return grads
        return (grads[0], summed_to(grads[1], tuple(bias.shape)), *grads[2:])

    return reduced
