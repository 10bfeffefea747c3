"""The msadapter_cpu provider's one device and one stream: ``torch.cuda.is_available``, the stream API megatron's
and MindSpeed's MoE dispatchers call (``current_stream``, ``Stream``, ``stream``, MindSpore's ``StreamCtx`` and
``communication_stream``), each answered by the CPU backend's single stream (:mod:`mindspeed_ms.compat.msadapter_cpu`).

A private part of :mod:`mindspeed_ms.patches.msadapter_cpu` (its ``register`` calls :func:`register_device`).
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

_MINDSPORE = (MINDSPORE_REQUIREMENT,)
_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)

#: target -> (replacement in compat.msadapter_cpu, requirements, why)
_DEVICE: dict[str, tuple[str, tuple[Any, ...], str]] = {
    "msadapter.cuda.is_available": ("no_accelerator", _MSADAPTER,
        "torch.cuda.is_available() is always True under msadapter, so scripts pick CUDA/NCCL paths "
        "(set_device, backend='nccl') that fail on the CPU backend"),
    "msadapter.cuda.current_stream": ("current_stream", _MSADAPTER,
        "torch.cuda.current_stream() is None on CPU: MindSpeed's alltoall_seq MoE dispatcher calls its "
        "synchronize() (AttributeError); the CPU backend's one stream, synchronize waits for queued work"),
    "msadapter.cuda.Stream": ("HostStream", _MSADAPTER,
        "torch.cuda.Stream() is MindSpore's Stream, which the CPU backend does not support: megatron's "
        "alltoall MoE dispatcher's side stream; the CPU backend's one stream"),
    "msadapter.cuda.stream": ("stream", _MSADAPTER,
        "torch.cuda.stream(s) is MindSpore's StreamCtx: on CPU the first one has no 'stream' attribute "
        "(AttributeError at __enter__; megatron's alltoall MoE dispatcher); one stream, nothing to switch"),
    "mindspore.runtime.StreamCtx": ("stream", _MINDSPORE,
        "MindSpore's StreamCtx on CPU: the first one has no 'stream' attribute (AttributeError at "
        "__enter__; MindSpeed's MindSpore async all-to-all under --moe-fb-overlap); one stream, nothing "
        "to switch"),
    "mindspore.runtime.communication_stream": ("communication_stream", _MINDSPORE,
        "mindspore.runtime.communication_stream() is None on CPU: MindSpeed's MindSpore async all-to-all "
        "(--moe-fb-overlap) calls its wait_stream(); the CPU backend's one stream"),
}


def register_device(registry: Any) -> None:
    """Register the CPU backend's answers to the device and stream API."""
    from mindspeed_ms.compat import msadapter_cpu as compat

    for target, (name, requires, why) in _DEVICE.items():
        registry.register(target, getattr(compat, name), requires=requires, purpose=why)
