"""One engine for the whole process: make ``mindspeed.patch_utils``'s manager fill mindspeed_ms's registry.

In MindSpore mode the built-in provider :mod:`mindspeed_ms.patches.mindspeed_patch_manager`
registers patches of ``mindspeed.patch_utils`` with lazy references, so nothing of MindSpeed is
imported: the engine's import hook installs them the moment ``mindspeed.patch_utils`` finishes
executing (or at once when it is imported already). MindSpeed's ``MindSpeedPatchesManager`` class
itself stays (every alias of it, under any name, and every subclass, e.g. MindSpeed-LLM's, is the
same class): its ``register_patch``, ``remove_wrappers``, ``remove_patches`` and ``apply_patches``
become ours, and its ``patches_info`` dict our live view, after what it held was registered on the
engine (:mod:`.carry_over`). ``Patch`` becomes ours. MindSpeed's and MindSpeed-LLM's registrations
then land in the registry the adaptation applies in its mode (the default one in MindSpore mode, PyTorch
mode's own in PyTorch mode), beside ours: one status, conflicts visible, exact revert of all.

``MINDSPEED_MS_ADOPT_MINDSPEED`` switches it: ``0``/``false``/``no``/``off`` opts out in MindSpore
mode; ``1``/``true``/``yes``/``on`` opts in in PyTorch mode (exact, visible patching for PyTorch
users too). ``MINDSPEED_MS_DISABLE=mindspeed_patch_manager`` also turns the provider off. The
adaptation decides (:func:`mindspeed_ms.adaptation.settings.adoption_wanted`); this module only registers.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ADOPT_ENV", "TARGETS", "WRAPS", "register_adoption"]

#: named in messages; read (once) by :mod:`mindspeed_ms.adaptation.settings`
ADOPT_ENV = "MINDSPEED_MS_ADOPT_MINDSPEED"
_MANAGER = "mindspeed.patch_utils.MindSpeedPatchesManager"
_OURS = "mindspeed_ms.patch_manager.manager:MindSpeedPatchesManager"
#: target in MindSpeed -> lazy reference to our replacement
TARGETS = {
    **{f"{_MANAGER}.{method}": f"{_OURS}.{method}"
       for method in ("register_patch", "remove_wrappers", "remove_patches", "apply_patches")},
    "mindspeed.patch_utils.Patch": "mindspeed_ms.patch_manager.patch:MindSpeedPatch",
}
#: target in MindSpeed -> the wrap that takes it over (MindSpeed's patches_info dict), as "module:function"
WRAPS = {f"{_MANAGER}.patches_info": "mindspeed_ms.patch_manager.carry_over:take_over_patches_info"}
_PURPOSE = ("MindSpeed's and MindSpeed-LLM's register_patch calls land in mindspeed_ms's registry: one status, "
            f"conflicts visible, exact revert ({ADOPT_ENV} opts out)")


def register_adoption(registry: Any) -> None:
    """Register the patches of ``mindspeed.patch_utils`` (skipped where MindSpeed is not installed).

    The registrations are the caller's (the provider's line calling this function is their site).
    """
    from mindspeed_ms.versions import MINDSPEED_REQUIREMENT

    for target, reference in TARGETS.items():
        registry.register(target, reference, kind="replace", requires=(MINDSPEED_REQUIREMENT,), purpose=_PURPOSE,
                          stacklevel=2)
    for target, reference in WRAPS.items():
        module, _, name = reference.partition(":")
        wrap = getattr(importlib.import_module(module), name)  # a small module of ours: imports nothing else
        registry.register(target, wrap, kind="wrap", requires=(MINDSPEED_REQUIREMENT,), purpose=_PURPOSE,
                          stacklevel=2)
