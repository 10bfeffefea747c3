"""MindSpeed's patch-manager API (``mindspeed.patch_utils``) on the mindspeed_ms engine.

``MindSpeedPatchesManager``, its ``patches_info`` and ``Patch`` objects behave as MindSpeed's do
for the ~900 ``register_patch`` calls of MindSpeed and MindSpeed-LLM, but every registration lands
in a :class:`~mindspeed_ms.PatchRegistry`: exact, lazy, reverted from records, visible in
``status()``. Modules: :mod:`.manager` (the manager class, ``patches_info``, :func:`bind_manager`),
:mod:`.patch` (the ``Patch`` view), :mod:`.binding` (which registry they fill), :mod:`.adoption`
(making ``mindspeed.patch_utils`` use these).

Only re-exports live here, loaded on first use (PEP 562).
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False

__all__ = ["MindSpeedPatchesManager", "Patch", "MindSpeedPatch", "PatchesInfo", "WrapperNotFoundError",
           "bind_manager"]

_EXPORTS = {
    "MindSpeedPatchesManager": "mindspeed_ms.patch_manager.manager",
    "PatchesInfo": "mindspeed_ms.patch_manager.manager",
    "WrapperNotFoundError": "mindspeed_ms.patch_manager.manager",
    "bind_manager": "mindspeed_ms.patch_manager.manager",
    "MindSpeedPatch": "mindspeed_ms.patch_manager.patch",
    "Patch": "mindspeed_ms.patch_manager.patch",
}

if TYPE_CHECKING:  # pragma: no cover
    from .manager import MindSpeedPatchesManager, PatchesInfo, WrapperNotFoundError, bind_manager
    from .patch import MindSpeedPatch
    from .patch import MindSpeedPatch as Patch


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mindspeed_ms.patch_manager' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
