"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401
from functools import wraps


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
