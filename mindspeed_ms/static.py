"""Compatibility alias of :mod:`mindspeed_ms.engine.static`, where this code now lives.

Kept so that ``from mindspeed_ms.static import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.static import (
    MISSING,
    OK,
    UNVERIFIABLE,
    StaticResolver,
    StaticResult,
    resolve_static,
)

__all__ = ["StaticResult", "StaticResolver", "resolve_static", "OK", "MISSING", "UNVERIFIABLE"]
