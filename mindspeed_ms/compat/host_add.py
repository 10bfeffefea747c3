"""``a + b`` of two float32 tensors of one shape that both record a gradient, as one autograd Function on the host.

Where both operands of an add require a gradient, MindSpore's engine would hand add's one gradient to both and clone
it with a kernel the CPU backend lacks; our ``Tensor.__add__`` wrapper (:func:`.grad_clone.add_wrapper`) makes each
operand enter the add through a view of itself, so that the add is three nodes of PyNative's autograd graph (two
views and MindSpore's add), each with its forward and backward dispatch. megatron's learned position embedding is
such an add (``word_embeddings + position_embeddings`` in ``LanguageModelEmbedding.forward``), once a step.

Here the plain case is :mod:`.host_bda`'s Function without a bias: the float32 sum over the host memory into a new
tensor of MindSpore's memory (``input`` copied, ``other`` added: each element the correctly rounded sum, PyTorch's
bits), and in the backward a copy of the output gradient for each operand that requires one (each its own tensor).

Taken: ``input + other`` (no ``alpha``, no ``out``, nothing else given), both MindSpore tensors that require a
gradient, float32, of one shape (no broadcast), contiguous, not empty (:func:`.host_bda.plain`). Everything else runs
the wrapped add. Registered with megatron's MLP and bias-dropout-add Functions, under the same switch
(``MINDSPEED_MS_HOST_BLOCKS``: ``patches/msadapter_cpu_kernels.py``), on MindSpore's CPU backend only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat import host_bda
from mindspeed_ms.compat.host_bda import plain as _plain

__all__ = ["add_wrapper", "taken"]


def taken(input: Any, other: Any) -> bool:
    """Whether :func:`add_wrapper` computes ``input + other`` (both given alone) in its Function."""
    try:
        if not input.requires_grad or not other.requires_grad:
            return False
    except AttributeError:  # not tensors
        return False
    return _plain(input, None, other, 0, False)


def add_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.__add__`` / ``Tensor.add`` / ``torch.add``: the plain case (:func:`taken`) as one Function."""

    @functools.wraps(op)
    def add(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or not taken(input, other):
            return op(input, other, *args, **kwargs)
        return host_bda.function().apply(input, other, None)

    return add
