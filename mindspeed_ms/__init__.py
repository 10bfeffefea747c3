"""Switch MindSpeed / Megatron training code to the MindSpore backend through a patch registry.

Only re-exports live here, loaded on first use (PEP 562), so ``import mindspeed_ms`` costs next to
nothing in PyTorch mode.
"""

from __future__ import annotations

from importlib import import_module

# Not `from typing import TYPE_CHECKING`: importing typing alone costs ~2 ms, more than this package.
TYPE_CHECKING = False

__all__ = ["PatchRegistry", "PatchRecord", "PatchStatus", "ApplyReport", "MindSporeAdaptation", "__version__"]

__version__ = "0.1.0"

_EXPORTS = {
    "PatchRegistry": "mindspeed_ms.engine.registry",
    "PatchRecord": "mindspeed_ms.engine.patch_record",
    "PatchStatus": "mindspeed_ms.engine.status",
    "ApplyReport": "mindspeed_ms.engine.status",
    "MindSporeAdaptation": "mindspeed_ms.adaptation",
}

if TYPE_CHECKING:  # pragma: no cover
    from .adaptation import MindSporeAdaptation
    from .engine.patch_record import PatchRecord
    from .engine.registry import PatchRegistry
    from .engine.status import ApplyReport, PatchStatus


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mindspeed_ms' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
