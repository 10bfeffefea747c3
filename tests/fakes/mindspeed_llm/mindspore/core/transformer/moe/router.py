"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

from functools import wraps

import torch  # noqa: F401


def topk_router_gating_func(self, input):
    return ("mindspore", "topk_router_gating_func")


def topk_router_routing_wrapper(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        return ("mindspore-wrapped", fn(*args, **kwargs))

    return wrapper
