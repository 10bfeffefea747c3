"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def apply_llama3_scaling(freqs):
    return ("mindspore", "apply_llama3_scaling")


def yarn_linear_ramp_mask(low, high, dim):
    return ("mindspore", "yarn_linear_ramp_mask")
