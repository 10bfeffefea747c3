"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

from functools import wraps

import torch  # noqa: F401


def reuse_fp32_param_distrib_optimizer_init_wrapper(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        return ("mindspore-wrapped", fn(*args, **kwargs))

    return wrapper
