"""The implicit gradient of a scalar loss (``loss.backward()``) as a tensor of MindSpore's memory written on the host.

``torch.autograd.backward(loss)`` without ``grad_tensors`` seeds the backward with ``ones_like(loss)``: under MSAdapter
a OnesLike kernel every backward (~250 us on the CPU backend, one of the tiny model's ~65 kernels a step; megatron's
``backward_step`` calls it so on the last pipeline stage). :func:`make_grads_wrapper` wraps MSAdapter's
``autograd._make_grads`` (what ``backward`` and ``grad`` call to fill in the missing gradients): a missing gradient of
a one-element float32 output is a new float32 tensor of the output's shape holding 1.0, written on the host; every
other case (a given gradient, another dtype, more than one element: PyTorch's error) is MSAdapter's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from mindspeed_ms.compat.host_memory import host_memory_reason

__all__ = ["make_grads_wrapper", "one_like"]


def one_like(output: Any) -> Any | None:
    """Return a new float32 tensor of ``output``'s shape holding 1.0 (``output``: one float32 element), else None."""
    import mindspore

    from mindspeed_ms.compat.host_outputs import new_float32

    if getattr(output, "dtype", None) is not mindspore.float32 or host_memory_reason() is not None:
        return None
    shape = tuple(output.shape)
    if math.prod(shape) != 1:
        return None
    tensor, array = new_float32(shape)
    array[...] = 1.0
    return tensor


def make_grads_wrapper(make_grads: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap MSAdapter's ``_make_grads(outputs, grads, is_grads_batched)``: a scalar float32 output's missing gradient
    from the host."""

    @functools.wraps(make_grads)
    def _make_grads(outputs: Sequence[Any], grads: Sequence[Any], is_grads_batched: bool) -> Any:
        if not is_grads_batched and len(grads) == len(outputs) and any(grad is None for grad in grads):
            grads = tuple(one_like(output) if grad is None else grad for output, grad in zip(outputs, grads))
        return make_grads(outputs, grads, is_grads_batched)

    return _make_grads
