"""Built-in provider: third-party shims MSAdapter ships that mislead megatron-core."""

from __future__ import annotations

from typing import Any

name = "third_party"

#: (module, purpose): declared as data, so the adaptation puts them in force before any provider runs
blocks = (
    ("transformer_engine",
     "msadapter's transformer_engine shim makes megatron believe TE is installed, then fails on "
     "transformer_engine.pytorch.cpp_extensions"),
    ("apex",
     "msadapter's apex shim makes megatron pick FusedLayerNorm, which needs the CUDA extension "
     "fused_layer_norm_cuda"),
)


def register(registry: Any, args: Any) -> None:
    """Block MSAdapter's ``transformer_engine`` and ``apex`` shims on every device.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    for module, purpose in blocks:
        registry.block(module, purpose=purpose)
