"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

from functools import wraps

import torch  # noqa: F401


def checkpoint_forward_wrapper(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        return ("mindspore-wrapped", fn(*args, **kwargs))

    return wrapper


def checkpoint_backward_wrapper(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        return ("mindspore-wrapped", fn(*args, **kwargs))

    return wrapper
