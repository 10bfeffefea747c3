"""Compatibility alias of :mod:`mindspeed_ms.engine.patch_record`, where this code now lives.

Kept so that ``from mindspeed_ms.patch import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.patch_record import (
    NO_REPLACEMENT,
    Patch,
    install,
    qualified_name,
    stub_chain,
)

__all__ = ["Patch", "NO_REPLACEMENT", "install", "stub_chain", "qualified_name"]
