"""Compatibility alias of :mod:`mindspeed_ms.engine.static_index`, where this code now lives.

Kept so that ``from mindspeed_ms.static_index import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.static_index import (
    Binding,
    SourceModule,
    absolute_name,
    collect_bindings,
)

__all__ = ["SourceModule", "Binding", "collect_bindings", "absolute_name"]
