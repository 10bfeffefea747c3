"""Sorts of bool tensors (scripts/opinfo_sweep.py; cases in tests/conformance/cases/fix_bool_sorts.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13: ``torch.sort``, ``Tensor.sort`` and
``Tensor.argsort`` of a bool tensor raise an untyped TypeError (the Sort kernel has no bool input); PyTorch sorts
``False`` before ``True``. They run on the tensor as uint8 (exact: 0 and 1) and give the values back as bool.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["bool_sort_wrapper"]


def bool_sort_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``sort`` / ``argsort``: a bool input is sorted as uint8; bool values come back as bool."""
    import mindspore

    @functools.wraps(op)
    def sort_as_torch(input: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(input, "_dtype", None) is not mindspore.bool_ or kwargs.get("out") is not None:
            return op(input, *args, **kwargs)
        result = op(input.to(mindspore.uint8), *args, **kwargs)
        if isinstance(result, tuple):
            items = [item.to(mindspore.bool_) if getattr(item, "_dtype", None) is mindspore.uint8 else item
                     for item in result]
            return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
        return result

    return sort_as_torch
