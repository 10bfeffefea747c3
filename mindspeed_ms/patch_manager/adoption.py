"""One engine for the whole process: make ``mindspeed.patch_utils``'s manager fill mindspeed_ms's registry.

In MindSpore mode the built-in provider :mod:`mindspeed_ms.patches.mindspeed_patch_manager`
registers patches of ``mindspeed.patch_utils`` with lazy references, so nothing of MindSpeed is
imported: the engine's import hook installs them the moment ``mindspeed.patch_utils`` finishes
executing (or at once when it is imported already). MindSpeed's ``MindSpeedPatchesManager`` class
itself stays (every alias of it, under any name, and every subclass, e.g. MindSpeed-LLM's, is the
same class): its ``register_patch``, ``remove_wrappers``, ``remove_patches`` and ``apply_patches``
become ours, and its ``patches_info`` dict our live view, after what it held was registered on the
engine (:mod:`.carry_over`). ``Patch`` becomes ours. MindSpeed's and MindSpeed-LLM's registrations
then land in the default registry, beside ours: one status, conflicts visible, exact revert of all.

``MINDSPEED_MS_ADOPT_MINDSPEED`` switches it: ``0``/``false``/``no``/``off`` opts out in MindSpore
mode; ``1``/``true``/``yes``/``on`` opts in in PyTorch mode (exact, visible patching for PyTorch
users too). ``MINDSPEED_MS_DISABLE=mindspeed_patch_manager`` also turns the provider off.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["ADOPT_ENV", "TARGETS", "WRAPS", "adoption_wanted", "register_adoption"]

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
_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")
_PURPOSE = ("MindSpeed's and MindSpeed-LLM's register_patch calls land in mindspeed_ms's registry: one status, "
            f"conflicts visible, exact revert ({ADOPT_ENV} opts out)")


def adoption_wanted(framework: str, environ: Mapping[str, str] | None = None) -> bool:
    """Tell whether ``mindspeed.patch_utils`` should be adopted: by default in MindSpore mode only.

    Args:
        framework: ``"mindspore"`` or ``"pytorch"``.
        environ: the environment (``MINDSPEED_MS_ADOPT_MINDSPEED``); ``os.environ`` when None.

    Raises:
        SettingError: ``MINDSPEED_MS_ADOPT_MINDSPEED`` is set to anything but ``1``/``true``/``yes``/``on``
            or ``0``/``false``/``no``/``off`` (a ``ValueError``; a typo never silently means the default).
    """
    env = os.environ if environ is None else environ
    raw = env.get(ADOPT_ENV) or ""
    value = raw.strip().lower()
    if not value:
        return str(framework).lower() == "mindspore"
    if value in _OFF:
        return False
    if value in _ON:
        return True
    from mindspeed_ms.engine.errors import SettingError

    raise SettingError(ADOPT_ENV, raw, f"one of {', '.join(_ON)} (adopt) or {', '.join(_OFF)} (do not adopt)")


def register_adoption(registry: Any) -> None:
    """Register the patches of ``mindspeed.patch_utils`` (skipped where MindSpeed is not installed)."""
    from mindspeed_ms.versions import MINDSPEED_REQUIREMENT

    for target, reference in TARGETS.items():
        registry.register(target, reference, kind="replace", requires=(MINDSPEED_REQUIREMENT,), purpose=_PURPOSE)
    for target, reference in WRAPS.items():
        module, _, name = reference.partition(":")
        wrap = getattr(importlib.import_module(module), name)  # a small module of ours: imports nothing else
        registry.register(target, wrap, kind="wrap", requires=(MINDSPEED_REQUIREMENT,), purpose=_PURPOSE)
