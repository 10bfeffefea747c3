"""Values out of a training run for the parity files: tensors as numpy arrays (copies, half precision widened), the
first tensor of a module's output, the one item of ``torch.autograd.backward([t])``'s list. Framework-neutral: both
the reference (PyTorch) and the candidate (MindSpore) side use them."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["first_tensor", "only", "to_numpy"]


def to_numpy(tensor: Any) -> np.ndarray:
    """``tensor`` as a numpy array of its own (float16/bfloat16 widened to float32)."""
    value = tensor.detach()
    if hasattr(value, "cpu"):
        value = value.cpu()
    if str(value.dtype).lower().endswith(("float16", "bfloat16")):
        value = value.float()
    # a copy: .numpy() shares memory with the tensor on both backends, and later in-place ops
    # (megatron's cross entropy subtracts in place from the logits) would change what was recorded
    return np.array(value.numpy(), copy=True)


def first_tensor(value: Any, tensor_type: type) -> Any:
    """The first ``tensor_type`` in ``value`` (nested tuples, lists, dict values), else None."""
    if isinstance(value, tensor_type):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            found = first_tensor(item, tensor_type)
            if found is not None:
                return found
    if isinstance(value, dict):
        for item in value.values():
            found = first_tensor(item, tensor_type)
            if found is not None:
                return found
    return None


def only(value: Any) -> Any:
    """Return the one item of a one-item list or tuple (``torch.autograd.backward([t])``), else ``value``."""
    return value[0] if isinstance(value, (tuple, list)) and len(value) == 1 else value
