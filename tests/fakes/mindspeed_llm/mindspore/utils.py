"""Stand-in for ``mindspeed_llm/mindspore/utils.py``: wrapper removal helpers that call ``Patch.parse_path``."""

import inspect
import sys

from mindspeed.patch_utils import MindSpeedPatchesManager, Patch


def apply_patch(original_func_name, new_func):
    """Set ``new_func`` at the target at once and rebind every module attribute holding the old object."""
    module_name, _, func_name = original_func_name.rpartition(".")
    owner, old = Patch.parse_path(module_name, func_name, False)
    setattr(owner, func_name, new_func)
    for module in list(sys.modules.values()):
        if hasattr(module, func_name) and id(getattr(module, func_name)) == id(old):
            setattr(module, func_name, new_func)


def reset_patch_v2(original_func_name):
    """Forget the wrappers registered for the target."""
    MindSpeedPatchesManager.patches_info[original_func_name].wrappers = []


def clear_wrapper_v2(original_func_name, target_func):
    """Replace PyTorch wrappers of the target by none, putting the undecorated function back."""
    reset_patch_v2(original_func_name)
    apply_patch(original_func_name, inspect.unwrap(target_func))
