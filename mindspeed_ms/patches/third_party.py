"""Built-in provider: third-party shims MSAdapter ships that mislead megatron-core."""

from __future__ import annotations

from typing import Any

name = "third_party"


def register(registry: Any, args: Any) -> None:
    """Block MSAdapter's ``transformer_engine`` and ``apex`` shims on every device.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    registry.block(
        "transformer_engine",
        purpose="msadapter's transformer_engine shim makes megatron believe TE is installed, then fails on "
                "transformer_engine.pytorch.cpp_extensions")
    registry.block(
        "apex",
        purpose="msadapter's apex shim makes megatron pick FusedLayerNorm, which needs the CUDA extension "
                "fused_layer_norm_cuda")
