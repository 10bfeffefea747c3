"""Built-in provider: MindSpeed's patch manager becomes mindspeed_ms's compatible one (one engine).

See :mod:`mindspeed_ms.patch_manager.adoption`: in MindSpore mode ``mindspeed.patch_utils``'s
``MindSpeedPatchesManager`` and ``Patch`` are replaced, when that module is imported, by
:mod:`mindspeed_ms.patch_manager`'s, so MindSpeed's and MindSpeed-LLM's registrations run on this
engine. The adaptation leaves this provider out where adoption is not wanted
(:func:`mindspeed_ms.adaptation.settings.adoption_wanted`: PyTorch mode, ``MINDSPEED_MS_ADOPT_MINDSPEED=0``).
"""

from __future__ import annotations

from typing import Any

name = "mindspeed_patch_manager"


def register(registry: Any, args: Any) -> None:
    """Register the adoption of ``mindspeed.patch_utils``.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (not needed).
    """
    from mindspeed_ms.patch_manager.adoption import register_adoption

    register_adoption(registry)
