"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def npu_rotary_position_embedding(x, cos, sin, mode=0):
    return ("mindspore", "npu_rotary_position_embedding")
