"""``torch.nn`` modules MSAdapter 0.5.0b1 lacks, written with MSAdapter's torch API (loaded on first use).

``torch.nn.RMSNorm`` (PyTorch >= 2.4) is absent: megatron-core's ``WrappedTorchNorm`` builds it for
``--normalization RMSNorm`` with the local layer spec, so Megatron-LM's own ``pretrain_gpt.py`` stopped at
model construction. This module imports MSAdapter: the provider refers to it lazily.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import msadapter as torch
import msadapter.nn as nn

from mindspeed_ms.compat import host_rms_norm

__all__ = ["RMSNorm"]

#: dtypes PyTorch normalises in float32 (its opmath type) and rounds once, at the end (weight included): its CPU
#: kernel. Compared by identity: ``str(torch.bfloat16)`` is MindSpore's ``"BFloat16"`` here, so a name test never
#: matched and --bf16 / --fp16 normalised in half precision op by op (Megatron-LM's first RMSNorm output differed
#: from PyTorch's in 1141 of 4096 elements).
_UPCAST = (torch.float16, torch.bfloat16)
#: ``torch.finfo(torch.float32).eps``: the default eps of a float32 input
_FLOAT32_EPS = float(torch.finfo(torch.float32).eps)


class RMSNorm(nn.Module):
    """Root-mean-square layer normalisation, as ``torch.nn.RMSNorm``.

    ``y = x / sqrt(mean(x**2 over the last len(normalized_shape) dims) + eps) * weight``; ``eps=None`` means
    ``torch.finfo(float32).eps`` for float16 / bfloat16 inputs (PyTorch's opmath type), else
    ``torch.finfo(x.dtype).eps``. Same constructor, parameters (``weight``, ones) and state-dict keys as PyTorch's.
    """

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        """Set the weight to ones."""
        if self.weight is not None:
            with torch.no_grad():
                self.weight.fill_(1.0)

    def forward(self, x: Any) -> Any:
        """Normalise ``x`` over its trailing ``normalized_shape`` dimensions."""
        if tuple(x.shape[-len(self.normalized_shape):]) != self.normalized_shape:
            raise RuntimeError(f"RMSNorm: expected input with shape [*, {', '.join(map(str, self.normalized_shape))}]"
                               f", but got input of size {list(x.shape)}")
        if host_rms_norm.on_host() and host_rms_norm.takes(x, self.weight, self.normalized_shape):  # float32, CPU
            eps = self.eps if self.eps is not None else _FLOAT32_EPS
            return host_rms_norm.rms_norm(x, self.weight, math.prod(self.normalized_shape), eps)
        dtype = x.dtype
        work = x.float() if any(dtype is half for half in _UPCAST) else x
        # eps=None: the machine epsilon of the type PyTorch computes in (float32 for half-precision inputs)
        eps = self.eps if self.eps is not None else torch.finfo(work.dtype).eps
        dims = tuple(range(-len(self.normalized_shape), 0))
        out = work * torch.rsqrt(work.pow(2).mean(dim=dims, keepdim=True) + eps)
        if self.weight is not None:
            out = out * self.weight.to(out.dtype)
        return out.to(dtype)

    def extra_repr(self) -> str:
        """Describe the module as PyTorch does."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
