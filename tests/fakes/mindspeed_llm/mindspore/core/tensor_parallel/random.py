"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def fork(self, name="model-parallel-rng"):
    return ("mindspore", "fork")
