"""megatron's tensor-parallel region mappings at tensor-parallel size 1, without an autograd Function.

``copy_to_tensor_model_parallel_region``, ``reduce_from_tensor_model_parallel_region``,
``scatter_to_tensor_model_parallel_region`` and ``gather_from_tensor_model_parallel_region``
(``megatron/core/tensor_parallel/mappings.py``) each apply an autograd Function whose forward and backward are the
identity when ``get_tensor_model_parallel_world_size()`` is 1: ``_reduce``, ``_split_along_last_dim`` and
``_gather_along_last_dim`` return their input then. Megatron's column and row parallel layers and its vocab-parallel
embedding call them on every forward (10 applies a training step of the tiny example at tp=1). A Function apply on
MindSpore's PyNative backend records a custom backward node and runs our Function checks (compat/function_grads.py):
~40 us each on the CPU backend; PyTorch's is a few microseconds.

Each wrap here returns its input at tensor-parallel size 1 (megatron's own test, the same function the Function's
forward and backward ask) and calls megatron's function otherwise. Values and gradients are those of the Function
(the identity both ways). What differs from PyTorch: PyTorch returns a new tensor object aliasing the input, whose
``grad_fn`` is the Function's backward node, and refuses an in-place write to it ("Output 0 of ... is a view and is
being modified inplace"); here the caller gets the input itself, so the write that PyTorch refuses goes through.
Code that runs on PyTorch never makes that write.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["MAPPINGS", "identity_at_tp_one_wrapper"]

#: the mapping functions of ``megatron.core.tensor_parallel.mappings`` that are the identity at tensor-parallel size 1
MAPPINGS = ("copy_to_tensor_model_parallel_region", "reduce_from_tensor_model_parallel_region",
            "scatter_to_tensor_model_parallel_region", "gather_from_tensor_model_parallel_region")


@functools.lru_cache(maxsize=1)
def _world_size() -> Callable[[], int]:
    from megatron.core.parallel_state import get_tensor_model_parallel_world_size

    return get_tensor_model_parallel_world_size  # type: ignore[no-any-return]


def identity_at_tp_one_wrapper(mapping: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap one of :data:`MAPPINGS`: its input back at tensor-parallel size 1, else ``mapping``'s result.

    Args:
        mapping: the megatron function, ``mapping(input_)``.

    Returns:
        ``mapping``'s signature. Any other call (keywords, more arguments: not megatron 0.12.1's) goes to ``mapping``.
    """

    @functools.wraps(mapping)
    def mapped(input_: Any, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and _world_size()() == 1:
            return input_
        return mapping(input_, *args, **kwargs)

    return mapped
