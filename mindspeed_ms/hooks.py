"""Compatibility alias of :mod:`mindspeed_ms.engine.watcher`, where this code now lives.

Kept so that ``from mindspeed_ms.hooks import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.watcher import (
    BlockedModuleError,
    ImportWatcher,
    watcher,
)

__all__ = ["ImportWatcher", "watcher", "BlockedModuleError"]
