"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def forward_backward_pipelining_without_interleaving_seq1f1b(*, forward_step_func, data_iterator, model,
                                                             num_microbatches, seq_length, micro_batch_size,
                                                             forward_only=False):
    return ("mindspore", "forward_backward_pipelining_without_interleaving_seq1f1b")
