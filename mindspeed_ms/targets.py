"""Compatibility alias of :mod:`mindspeed_ms.engine.targets`, where this code now lives.

Kept so that ``from mindspeed_ms.targets import ...`` written before the engine moved into
:mod:`mindspeed_ms.engine` keeps working; new code imports from the engine.
"""

from __future__ import annotations

from mindspeed_ms.engine.targets import (
    Located,
    find_module_spec,
    locate,
    not_found,
    parse_target,
    resolve_target,
    suggest,
    top_level_exists,
)

__all__ = ["parse_target", "Located", "locate", "resolve_target", "suggest", "top_level_exists", "not_found",
    "find_module_spec"]
