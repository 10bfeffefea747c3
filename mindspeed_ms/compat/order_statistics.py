"""``median``/``nanmedian`` without a dimension and ``xlogy`` at zero, as PyTorch computes them.

Measured on MindSpore 2.7.1 + MSAdapter 0.5.0b1 against torch 2.13: ``torch.median(x)`` / ``x.median()`` /
``nanmedian`` without ``dim`` returned a ``(values, indices)`` tuple along the *last* dimension (PyTorch: the median
of all elements, one 0-d tensor), silently other values for a 2-d input; with ``dim`` a plain tuple (PyTorch:
``torch.return_types.median``, ``.values``/``.indices``). ``torch.xlogy(0, y)`` was nan for y = 0 or inf (PyTorch:
0 wherever x is 0 and y is not nan).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.return_types import return_type

__all__ = ["median_wrapper", "xlogy_wrapper"]


def median_wrapper(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap ``median``/``nanmedian`` (function or method; ``name`` is the op's): no ``dim``, the flattened input's
    median as a 0-d tensor; with ``dim``, ``torch.return_types.<name>``."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def median(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
            if not args and not kwargs:
                if input.numel() == 0:
                    return op(input, *args, **kwargs)  # MindSpore's refusal stands (PyTorch: nan)
                return op(input.reshape(-1), 0)[0]
            result = op(input, *args, **kwargs)
            if isinstance(result, tuple) and len(result) == 2:
                return return_type(name)((result[0], result[1]))
            return result

        return median

    return wrapper


def xlogy_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.xlogy``/``Tensor.xlogy``: 0 where ``input`` is 0 and ``other`` is not nan."""

    @functools.wraps(op)
    def xlogy(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        result = op(input, other, *args, **kwargs)
        if args or kwargs or not hasattr(result, "shape"):
            return result
        from msadapter.ops import array

        x = input if hasattr(input, "shape") else result.new_full((), float(input))
        y = other if hasattr(other, "shape") else result.new_full((), float(other))
        zero = (x == 0) & (y == y)
        return array.where(zero, result.new_zeros(()), result)

    return xlogy
