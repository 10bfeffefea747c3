"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

from functools import wraps

import torch  # noqa: F401


def get_batch_on_this_tp_rank(data_iterator):
    return ("mindspore", "get_batch_on_this_tp_rank")


def _compute_actual_seq_len(origin_seq):
    return ("mindspore", "_compute_actual_seq_len")


def get_batch_wrapper(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        return ("mindspore-wrapped", fn(*args, **kwargs))

    return wrapper


def sft_trainer_loss_func(self, input_tensor, output_tensor):
    return ("mindspore", "sft_trainer_loss_func")
