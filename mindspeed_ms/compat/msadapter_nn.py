"""``torch.nn`` modules MSAdapter 0.5.0b1 lacks, written with MSAdapter's torch API (loaded on first use).

``torch.nn.RMSNorm`` (PyTorch >= 2.4) is absent: megatron-core's ``WrappedTorchNorm`` builds it for
``--normalization RMSNorm`` with the local layer spec, so Megatron-LM's own ``pretrain_gpt.py`` stopped at
model construction. This module imports MSAdapter: the provider refers to it lazily.
"""

from __future__ import annotations

import numbers
from typing import Any

import msadapter as torch
import msadapter.nn as nn

__all__ = ["RMSNorm"]

#: dtypes PyTorch normalises in float32 (its opmath type) before casting back.
_UPCAST = ("float16", "bfloat16")


class RMSNorm(nn.Module):
    """Root-mean-square layer normalisation, as ``torch.nn.RMSNorm``.

    ``y = x / sqrt(mean(x**2 over the last len(normalized_shape) dims) + eps) * weight``; ``eps=None`` means
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
        dtype = x.dtype
        work = x.float() if str(dtype).rsplit(".", 1)[-1] in _UPCAST else x
        eps = self.eps if self.eps is not None else torch.finfo(dtype).eps
        dims = tuple(range(-len(self.normalized_shape), 0))
        out = work * torch.rsqrt(work.pow(2).mean(dim=dims, keepdim=True) + eps)
        if self.weight is not None:
            out = out * self.weight.to(out.dtype)
        return out.to(dtype)

    def extra_repr(self) -> str:
        """Describe the module as PyTorch does."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
