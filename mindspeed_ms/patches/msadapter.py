"""Built-in provider: MSAdapter behaviour that differs from PyTorch on every MindSpore device."""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

name = "msadapter"
requires = (MSADAPTER_REQUIREMENT,)

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)


def register(registry: Any, args: Any) -> None:
    """Register the device-independent MSAdapter patches.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.compat import msadapter as compat

    registry.register(
        "msadapter.random.manual_seed", compat.seed_mindspore_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.manual_seed leaves nn.init (NumPy) and CPU random ops (MindSpore seed) unseeded, "
                "so ranks and runs build different models")
