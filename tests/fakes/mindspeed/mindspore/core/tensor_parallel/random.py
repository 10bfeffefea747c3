"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def local_set_cuda_rng_state(new_state, device=-1, graph_safe=False):
    return ("mindspore", "local_set_cuda_rng_state")
