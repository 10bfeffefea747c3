"""Built-in provider: MindSpeed's patch manager becomes mindspeed_ms's compatible one (one engine).

See :mod:`mindspeed_ms.patch_manager.adoption`: in MindSpore mode ``mindspeed.patch_utils``'s
``MindSpeedPatchesManager`` and ``Patch`` are replaced, when that module is imported, by
:mod:`mindspeed_ms.patch_manager`'s, so MindSpeed's and MindSpeed-LLM's registrations run on this
engine. ``MINDSPEED_MS_ADOPT_MINDSPEED=0`` opts out.
"""

from __future__ import annotations

from typing import Any

name = "mindspeed_patch_manager"


def register(registry: Any, args: Any) -> None:
    """Register the adoption of ``mindspeed.patch_utils`` unless ``MINDSPEED_MS_ADOPT_MINDSPEED`` opts out.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (``ai_framework`` decides the default).
    """
    from mindspeed_ms.patch_manager.adoption import adoption_wanted, register_adoption

    if adoption_wanted(getattr(args, "ai_framework", None) or "mindspore"):
        register_adoption(registry)
