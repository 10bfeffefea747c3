"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

from functools import wraps

import torch  # noqa: F401


def attention_init_wrapper(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        return ("mindspore-wrapped", fn(*args, **kwargs))

    return wrapper


def attention_forward_wrapper(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        return ("mindspore-wrapped", fn(*args, **kwargs))

    return wrapper


def core_attention_forward_wrapper(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        return ("mindspore-wrapped", fn(*args, **kwargs))

    return wrapper
