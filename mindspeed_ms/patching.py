"""Compatibility alias of :mod:`mindspeed_ms.engine.journal`, where this code now lives.

Kept so that ``from mindspeed_ms.patching import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.journal import (
    MISSING,
    Record,
    build_value,
    counting_shim,
    evict_module,
    is_identity_meaningful,
    make_stub,
    placeholder,
    rebind_aliases,
    set_attr,
    undo,
)

__all__ = ["MISSING", "Record", "build_value", "set_attr", "undo", "rebind_aliases", "make_stub",
    "evict_module", "placeholder", "counting_shim", "is_identity_meaningful"]
