"""Replacement implementations that the built-in patch providers install.

One module per target library (:mod:`.msadapter`, :mod:`.msadapter_cpu`, :mod:`.megatron_core`).
They are plain functions and decorators: they know nothing about patching, and they import torch,
MSAdapter or MindSpore only when called, so a provider can reference them while registering
without importing any target.
"""
