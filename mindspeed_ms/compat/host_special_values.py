"""``torch.isnan`` / ``isinf`` / ``isfinite`` (and the Tensor methods) of a float32 tensor, on the host.

megatron checks its loss and every gradient bucket's norm for NaN and infinity every micro-batch and step
(``RerunStateMachine.validate_result(result=loss[0], rejection_func=torch.isnan)`` in ``pretrain_gpt.py``'s
``loss_func``, twice; ``check_grads`` of each bucket, twice; MindSpeed-LLM's the same): a 0-d float32 tensor each,
and Python's truth test of the answer. On MindSpore's CPU backend that is an IsNan/IsInf kernel launch behind our
conformance wrappers (the bool result kept out of autograd), ~180-240 us a call in a training step (measured in a
loop after a GEMM, the adaptor's runtime settings on), where NumPy's ufunc over the tensor's host memory into a new
bool tensor takes ~40 us.

Taken for a contiguous float32 tensor on MindSpore's CPU backend with nothing else given (no ``out=``): NumPy's
``isnan``/``isinf``/``isfinite`` are IEEE's predicates, PyTorch's values element for element (NaN of any payload
and sign, both infinities, subnormals and -0.0 finite); the result is a new bool tensor outside autograd's record
(PyTorch's result never requires a gradient), whether or not the input records one. Everything else (other dtypes,
views with strides, other devices) keeps the wrapped op.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.host_memory import contiguity_read, host_array, host_memory_reason
from mindspeed_ms.compat.host_outputs import new_empty

__all__ = ["PREDICATES", "special_value_wrapper"]

#: the predicates this module computes, by their torch name
PREDICATES = ("isnan", "isinf", "isfinite")


@functools.lru_cache(maxsize=1)
def _dtypes() -> tuple[Any, Any]:
    import mindspore

    return mindspore.float32, mindspore.bool_


def _taken(tensor: Any) -> bool:
    """Whether the predicate of ``tensor`` runs on the host: a contiguous float32 tensor, MindSpore's CPU backend."""
    return (getattr(tensor, "_dtype", None) is _dtypes()[0] and host_memory_reason() is None
            and contiguity_read()(tensor))


def special_value_wrapper(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap ``torch.<name>(input)`` / ``Tensor.<name>(self)`` (``name`` one of :data:`PREDICATES`): a contiguous
    float32 input's answer is NumPy's predicate over its host memory, written into a new bool tensor."""
    if name not in PREDICATES:
        raise ValueError(f"special_value_wrapper: {name!r} is not one of {PREDICATES}")

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        import numpy as np

        predicate = getattr(np, name)

        @functools.wraps(op)
        def special(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - PyTorch's name
            if args or kwargs or not _taken(input):
                return op(input, *args, **kwargs)
            values = host_array(input)  # after the kernels queued before (host_array waits for them)
            result = new_empty(tuple(input._shape), _dtypes()[1])
            predicate(values, out=host_array(result, sync=False))
            return result

        return special

    return wrapper
