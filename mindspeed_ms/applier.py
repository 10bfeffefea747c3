"""Compatibility alias of :mod:`mindspeed_ms.engine.applier`, where this code now lives.

Kept so that ``from mindspeed_ms.applier import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.applier import (
    Applier,
)

__all__ = ["Applier"]
