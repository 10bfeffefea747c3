"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def register_functions(self):
    return ("mindspore", "register_functions")


def get_modules_from_pretrained(self, device_map="cpu", trust_remote_code=True):
    return ("mindspore", "get_modules_from_pretrained")
