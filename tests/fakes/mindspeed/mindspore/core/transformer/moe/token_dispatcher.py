"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def preprocess(self, indices, *args, **kwargs):
    return ("mindspore", "preprocess")


def token_permutation(self, hidden_states, probs, indices):
    return ("mindspore", "token_permutation")
