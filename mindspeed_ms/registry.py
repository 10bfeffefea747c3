"""Compatibility alias of :mod:`mindspeed_ms.engine.registry`, where this code now lives.

Kept so that ``from mindspeed_ms.registry import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.registry import (
    PatchRegistry,
)

__all__ = ["PatchRegistry"]
