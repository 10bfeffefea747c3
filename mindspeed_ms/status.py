"""Compatibility alias of :mod:`mindspeed_ms.engine.status`, where this code now lives.

Kept so that ``from mindspeed_ms.status import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.status import (
    STATES,
    ApplyReport,
    PatchStatus,
)

__all__ = ["STATES", "PatchStatus", "ApplyReport"]
