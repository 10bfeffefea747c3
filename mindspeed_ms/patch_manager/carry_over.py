"""Take over MindSpeed's ``patches_info`` on adoption: registrations made before it move to the engine.

A script may use ``mindspeed.patch_utils.MindSpeedPatchesManager`` before ``mindspeed_ms.adaptor``
is imported (or before the adaptation applies): MindSpeed's class-level ``patches_info`` dict then
already holds ``Patch`` objects. Adoption installs our methods on MindSpeed's class (so every alias
and subclass of it uses the engine) and puts our live ``patches_info`` in place of that dict
through :func:`take_over_patches_info`, a wrap that receives the dict and registers every entry in
the manager's registry first: nothing registered through MindSpeed's manager is dropped. A patch
MindSpeed's manager already *applied* cannot be taken over exactly (its original is gone from the
target, and MindSpeed's own ``remove_patch`` does not restore class attributes): adoption then fails
with :class:`AdoptionError` naming those targets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import AdoptionError

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping

__all__ = ["AdoptionError", "take_over_patches_info"]

#: the registration site shown for what was registered through MindSpeed's manager before the adoption
CARRIED_SITE = "<registered through mindspeed.patch_utils before mindspeed_ms adopted it>"


def _is_mindspeed_dummy(func: Any) -> bool:
    """Tell whether ``func`` is MindSpeed's placeholder (``dummy_function_wrapper(name)``'s result)."""
    return getattr(func, "__qualname__", "") == "dummy_function_wrapper.<locals>.dummy_function"


def take_over_patches_info(registrations: Mapping[str, Any]) -> Any:
    """Register every entry of MindSpeed's ``patches_info`` through our manager; return our ``patches_info``.

    Each ``Patch`` keeps what MindSpeed would apply: its ``patch_func`` (MindSpeed's dummy function as
    our placeholder), its wrappers in order, ``create_dummy``. A target emptied by ``remove_patch`` keeps
    its key. All entries go in or none.

    Raises:
        AdoptionError: MindSpeed's manager already applied some of them (a ``RuntimeError``).
        PatchConflictError: one of them conflicts with a registration made through mindspeed_ms.
    """
    from .binding import default_binding
    from .manager import MindSpeedPatchesManager
    from .patch import register_viewed, view_of

    applied = tuple(target for target, patch in registrations.items() if getattr(patch, "is_applied", False))
    if applied:
        raise AdoptionError(
            f"MindSpeed's patch manager applied {', '.join(map(repr, applied))} before mindspeed_ms adopted it: "
            f"those patches cannot be taken over exactly. Import mindspeed_ms.adaptor before anything applies "
            f"MindSpeed's patches (the first import of the script), or set MINDSPEED_MS_ADOPT_MINDSPEED=0 to "
            f"leave MindSpeed's manager alone", targets=applied)
    binding = default_binding()
    registry = binding.registry()
    with registry.provider(binding.name):  # all or nothing, attributed to MindSpeed's manager
        for target, patch in registrations.items():
            func = getattr(patch, "patch_func", None)
            if func is not None:
                register_viewed(binding, target, None if _is_mindspeed_dummy(func) else func, force_patch=False,
                                create_dummy=bool(getattr(patch, "create_dummy", False)), registry=registry,
                                kind="replace", site=CARRIED_SITE)
            for wrapper in list(getattr(patch, "wrappers", ())):
                register_viewed(binding, target, wrapper, force_patch=False,
                                create_dummy=bool(getattr(patch, "create_dummy", False)), registry=registry,
                                kind="wrap", site=CARRIED_SITE)
            view_of(binding, registry, target)  # an emptied Patch keeps its key, as in MindSpeed
    return MindSpeedPatchesManager.patches_info
