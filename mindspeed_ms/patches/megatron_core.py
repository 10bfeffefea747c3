"""Built-in provider: megatron-core code that relies on PyTorch semantics MindSpore lacks."""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MEGATRON_CORE_REQUIREMENT

name = "megatron_core"
requires = (MEGATRON_CORE_REQUIREMENT,)

_MEGATRON = (MEGATRON_CORE_REQUIREMENT,)
_CROSS_ENTROPY = "megatron.core.tensor_parallel.cross_entropy.VocabParallelCrossEntropy"


def register(registry: Any, args: Any) -> None:
    """Register the megatron-core patches for the device MindSpore computes on.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.device import device_target

    if device_target() == "CPU":
        from mindspeed_ms.compat import megatron_core as compat

        registry.register(
            f"{_CROSS_ENTROPY}.calculate_gradients", compat.calculate_gradients, requires=_MEGATRON,
            purpose="vocab-parallel cross entropy writes the target term into a view of the softmax; on CPU "
                    "the write does not reach the base, so the gradient silently lost it")
        registry.register(
            "megatron.core.transformer.utils.attention_mask_func", compat.attention_mask_func, requires=_MEGATRON,
            purpose="the causal mask is applied with masked_fill_ on a view of the attention scores, which autograd "
                    "records: MindSpore's CPU backend cannot write through it (the mask was silently dropped: "
                    "every token saw the future); applied out of place instead")
