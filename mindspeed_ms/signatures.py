"""Compatibility alias of :mod:`mindspeed_ms.engine.signatures`, where this code now lives.

Kept so that ``from mindspeed_ms.signatures import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.signatures import (
    signature_problems,
    unwrap_descriptor,
)

__all__ = ["signature_problems", "unwrap_descriptor"]
