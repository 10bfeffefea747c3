"""Compatibility alias of :mod:`mindspeed_ms.engine.requirements`, where this code now lives.

Kept so that ``from mindspeed_ms.requirements import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.requirements import (
    normalize_requires,
    unmet_requirements,
)

__all__ = ["normalize_requires", "unmet_requirements"]
