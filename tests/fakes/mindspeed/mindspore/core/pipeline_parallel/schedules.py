"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def deallocate_output_tensor_(out, deallocate_pipeline_outputs=False):
    return ("mindspore", "deallocate_output_tensor_")
