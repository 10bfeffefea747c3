"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def npu_matmul_add_fp32(total_input, grad_output, grad):
    return ("mindspore", "npu_matmul_add_fp32")
