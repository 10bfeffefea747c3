"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


class SharedMemoryManager:
    origin = "mindspore"

    def __init__(self, name, create=False, size=0):
        self.name = name
