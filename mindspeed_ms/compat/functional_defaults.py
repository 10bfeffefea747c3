"""``torch.nn.functional`` functions whose MSAdapter defaults are not PyTorch's (a call that leaves them out computed
something else, silently), found by comparing every signature's defaults with torch 2.13's.

Measured on MSAdapter 0.5.0b1: ``F.smooth_l1_loss(a, b)`` returned the elementwise losses (its ``reduction``
defaulted to ``'none'``; PyTorch's ``'mean'``) and computed float64 in float32; ``F.dropout2d(x, p)`` did nothing
(``training`` defaulted to False; PyTorch's True). Here ``smooth_l1_loss`` is PyTorch's definition in the input's
dtype (``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta``; ``beta = 0``: the L1 loss), with
PyTorch's signature (``size_average``/``reduce``, the deprecated pair, raise: name ``reduction``), and
``dropout2d`` takes PyTorch's default. Other defaults that differ change nothing computed (``F.pad``'s ``value``
None vs 0.0) or are legacy (``F.softmax`` without ``dim``).
"""

from __future__ import annotations

from typing import Any, Callable

from mindspeed_ms.compat.errors import UnsupportedOpOptionError

__all__ = ["dropout2d_wrapper", "smooth_l1_loss_wrapper"]

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

    smooth_l1_loss.__wrapped__ = op  # type: ignore[attr-defined]
    return smooth_l1_loss


def dropout2d_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.dropout2d``: ``training`` defaults to True, as in PyTorch."""

    def dropout2d(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:  # noqa: A002
        return op(input, p, training, inplace)

    dropout2d.__wrapped__ = op  # type: ignore[attr-defined]
    return dropout2d
