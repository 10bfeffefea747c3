"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def swap_adamw_step(self, closure=None):
    return ("mindspore", "swap_adamw_step")
