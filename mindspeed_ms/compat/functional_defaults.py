"""``torch.nn.functional`` functions whose MSAdapter defaults are not PyTorch's (a call that leaves them out computed
something else, silently), found by comparing every signature's defaults with torch 2.13's
(tests/test_signature_defaults.py).

Measured on MSAdapter 0.5.0b1: ``F.smooth_l1_loss(a, b)`` returned the elementwise losses (its ``reduction``
defaulted to ``'none'``; PyTorch's ``'mean'``) and computed float64 in float32; ``F.dropout2d(x, p)`` did nothing
(``training`` defaulted to False; PyTorch's True); ``F.rms_norm`` required ``weight`` and added 1e-5 where PyTorch
adds ``torch.finfo(dtype).eps`` when ``eps`` is left out. Here ``smooth_l1_loss`` is PyTorch's definition in the
input's dtype (``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta``; ``beta = 0``: the L1 loss),
with PyTorch's signature (``size_average``/``reduce``, the deprecated pair, raise: name ``reduction``);
``dropout2d`` takes PyTorch's default; ``rms_norm`` is PyTorch's definition (``x / sqrt(mean(x**2) + eps)``, times
``weight``; float16/bfloat16 computed in float32 and rounded once). Other defaults that differ change nothing
computed (``F.pad``'s ``value`` None vs 0.0) or are legacy (``F.softmax`` without ``dim``).
"""

from __future__ import annotations

from typing import Any, Callable

from mindspeed_ms.compat.errors import UnsupportedOpOptionError

__all__ = ["dropout2d_wrapper", "rms_norm_wrapper", "smooth_l1_loss_wrapper"]

_REDUCTIONS = ("none", "mean", "sum")


def smooth_l1_loss_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.smooth_l1_loss``: PyTorch's signature, defaults and arithmetic (``op`` is not called)."""

    def smooth_l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,  # noqa: A002
                       reduction: str = "mean", beta: float = 1.0) -> Any:
        if size_average is not None or reduce is not None:
            raise UnsupportedOpOptionError(
                "torch.nn.functional.smooth_l1_loss", "size_average/reduce",
                "not supported here (PyTorch deprecated them); pass reduction='mean', "
                "'sum' or 'none' instead")
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{reduction} is not a valid value for reduction")
        if beta < 0:
            raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
        difference = (input - target).abs()
        if beta == 0:
            loss = difference
        else:
            from msadapter.ops import array

            loss = array.where(difference < beta, difference * difference * (0.5 / beta), difference - 0.5 * beta)
        if reduction == "mean":
            return loss.mean()
        return loss.sum() if reduction == "sum" else loss

    return smooth_l1_loss


def dropout2d_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.dropout2d``: ``training`` defaults to True, as in PyTorch."""

    def dropout2d(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:  # noqa: A002
        return op(input, p, training, inplace)

    return dropout2d


def rms_norm_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.rms_norm``: PyTorch's signature (``weight`` optional, ``eps`` None: the dtype's epsilon) and
    definition (``op`` is not called)."""

    def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: Any = None) -> Any:  # noqa: A002
        import mindspore

        dims = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if tuple(input.shape[len(input.shape) - len(dims):]) != dims or len(dims) > len(input.shape):
            raise RuntimeError(f"Given normalized_shape={list(dims)}, expected input with shape [*, "
                               f"{', '.join(str(n) for n in dims)}], but got input of size{list(input.shape)}")
        dtype = input.dtype
        wide = dtype in (mindspore.float16, mindspore.bfloat16)
        x = input.to(mindspore.float32) if wide else input
        if eps is None:
            import numpy as np

            eps = float(np.finfo(mindspore.dtype_to_nptype(mindspore.float32 if wide else dtype)).eps)
        axes = tuple(range(-len(dims), 0))
        out = x * ((x * x).mean(axes, keepdim=True) + eps).rsqrt()
        if weight is not None:
            out = out * (weight.to(mindspore.float32) if wide else weight)
        return out.to(dtype) if wide else out

    return rms_norm
