"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def _GMM_patched_load(self):
    return ("mindspore", "_GMM_patched_load")


def _GMM_patched_load2(self):
    return ("mindspore", "_GMM_patched_load2")
