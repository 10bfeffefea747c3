"""Built-in provider: the device an MSAdapter tensor reports on MindSpore's CPU backend (the project's rule).

MSAdapter sets ``Tensor.device = device('Ascend')``, ``is_cuda = True`` and ``is_cpu = False`` for every
tensor, whatever MindSpore computes on. The rule here (README, "Device reported on CPU"): on the CPU
backend a tensor reports where it is, ``cpu``, ``is_cpu`` true, ``is_cuda`` false, as a PyTorch CPU tensor
does; requests for an accelerator (``device='cuda'``, ``torch.cuda.current_device()``, ``.cuda()``) keep
naming it and the CPU patches place the tensor on the CPU. On Ascend nothing is registered.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

name = "tensor_device"
requires = (MSADAPTER_REQUIREMENT,)

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)


def register(registry: Any, args: Any) -> None:
    """Register the CPU device rule, or nothing when MindSpore does not compute on the CPU.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.device import device_target

    if device_target() != "CPU":
        return
    from mindspeed_ms.compat import checkpoint

    for attribute in ("device", "is_cpu", "is_cuda"):
        registry.register(
            f"mindspore.common.tensor.Tensor.{attribute}", getattr(checkpoint, attribute), requires=_MSADAPTER,
            purpose=f"Tensor.{attribute} says Ascend/CUDA for every tensor, also on the CPU backend where every "
                    f"tensor is in host memory: megatron's checkpoint writer asserts tensor.is_cpu (torch_dist "
                    f"failed); tensors report the CPU (README, 'Device reported on CPU')")
