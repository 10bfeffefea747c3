"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def calculate_predicted_logits(vocab_parallel_logits, target, logits_max, vocab_start_index, vocab_end_index):
    return ("mindspore", "calculate_predicted_logits")


def prepare_gradient_calculation_operands(softmax, target_mask):
    return ("mindspore", "prepare_gradient_calculation_operands")
