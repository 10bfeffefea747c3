"""``torch.histc`` and ``torch.bincount`` as PyTorch computes them (MindSpore's CPU backend).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13 (tests/conformance/cases/
ops_histograms.py):

- ``histc`` of an empty tensor returned uninitialised counts (``[0, 0, 1065353216]`` for three bins; PyTorch:
  zeros), counted nan in the first bin (PyTorch skips it), refused the default ``min=0, max=0`` (PyTorch: the data's
  range) with a TypeError, refused float64 and integer inputs (MindSpeed's MindSpore-backend alltoall dispatcher calls
  ``torch.histc(indices, bins=num_experts, min=0, max=num_experts)`` on the int64 top-k indices; MindSpeed-LLM's
  router on int32 ones: both run on Ascend, where torch_npu counts integer inputs), and refused a non-finite range or
  ``max < min`` with ValueError (PyTorch: RuntimeError).
- ``bincount`` of an empty tensor ignored ``minlength`` (``[]``; PyTorch: ``minlength`` zeros).

``histc`` is counted on the host, with PyTorch's CPU rule: an element ``x`` with ``min <= x <= max`` goes to bin
``int((x - min) * bins / (max - min))`` computed in that order in the input's floating type (float32 for float16,
float64 for integers), the last bin taking ``x == max``; nan and elements outside the range are skipped; the result
has the input's dtype. Its inputs are small (a micro-batch's routing indices); no gradient flows through a histogram.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from mindspeed_ms.compat.errors import TorchRefusalError

__all__ = ["counts", "histc_wrapper", "bincount_wrapper"]


def counts(values: np.ndarray, bins: int, min: float, max: float) -> np.ndarray:
    """PyTorch's ``histc`` of ``values`` (a NumPy array), in its dtype; raises :class:`TorchRefusalError` as PyTorch
    raises RuntimeError."""
    if bins <= 0:
        raise TorchRefusalError("torch.histc", f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    floating = values.dtype if values.dtype in (np.float32, np.float64) else (
        np.dtype(np.float32) if values.dtype == np.float16 else np.dtype(np.float64))
    data = values.reshape(-1).astype(floating, copy=False)
    low, high = floating.type(min), floating.type(max)
    if low == high and data.size:
        low, high = data.min(), data.max()
    if low == high:
        low, high = low - 1, high + 1
    if not (np.isfinite(low) and np.isfinite(high)):
        raise TorchRefusalError("torch.histc", f"torch.histc: range of [{_number(low)}, {_number(high)}] is not finite")
    if high < low:
        raise TorchRefusalError("torch.histc", "torch.histc: max must be larger than min")
    kept = data[(data >= low) & (data <= high)]  # nan fails both comparisons
    with np.errstate(invalid="ignore", over="ignore"):
        position = ((kept - low) * floating.type(bins) / (high - low)).astype(np.int64)
    position[position == bins] = bins - 1
    return np.bincount(position, minlength=bins).astype(values.dtype)


def _number(value: Any) -> str:
    """A bound as PyTorch prints it in its message (``0``, ``inf``, ``1.5``)."""
    value = float(value)
    return str(int(value)) if value.is_integer() else str(value)


def histc_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.histc(input, bins=100, min=0, max=0)`` (and ``Tensor.histc``): counted on the host."""

    @functools.wraps(op)
    def histc(input: Any, bins: int = 100, min: float = 0, max: float = 0, **kwargs: Any) -> Any:
        if kwargs or not hasattr(input, "asnumpy"):
            return op(input, bins, min, max, **kwargs)
        import mindspore

        return mindspore.Tensor(counts(input.asnumpy(), int(bins), min, max))

    return histc


def bincount_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.bincount(input, weights=None, minlength=0)``: an empty input gives ``minlength`` zeros (int64, as
    PyTorch's even with weights)."""

    @functools.wraps(op)
    def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Any:
        shape = getattr(input, "shape", None)
        if shape is not None and len(shape) == 1 and shape[0] == 0 and minlength >= 0:
            import mindspore

            return mindspore.Tensor(np.zeros((int(minlength),), np.int64))
        return op(input, weights, minlength)

    return bincount
