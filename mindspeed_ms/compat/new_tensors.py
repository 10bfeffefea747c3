"""``Tensor.new_zeros`` / ``new_ones`` of a 0-d shape and ``Tensor.new_full`` on the CPU, as PyTorch makes them.

MSAdapter 0.5.0b1's ``new_zeros(())`` / ``new_ones(())`` unpack the empty shape into ``torch.zeros()`` with no size
and fail (TypeError / IndexError; PyTorch: a 0-d tensor), and MindSpore's ``Tensor.new_full`` raises
NotImplementedError ("support Ascend only") on the CPU and takes no ``requires_grad``. Here the 0-d shapes and
``new_full`` go through ``torch.zeros``/``torch.ones``/``torch.full`` with PyTorch's defaults: the dtype of
``self`` unless ``dtype=`` is given (``int_tensor.new_full((2,), 2.7)`` is int32 ``[2, 2]``), and
``requires_grad=`` honoured. Every other call reaches the original.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Callable

__all__ = ["zero_dim_wrapper", "new_full"]


def _shape(size: tuple[Any, ...]) -> tuple[int, ...] | None:
    """The shape ``new_zeros(*size)`` asks for when it is 0-d, else None."""
    if not size:
        return ()
    if len(size) == 1 and isinstance(size[0], Sequence) and not isinstance(size[0], str) and len(size[0]) == 0:
        return ()
    return None


def zero_dim_wrapper(factory: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap ``Tensor.new_zeros`` (``factory="zeros"``) or ``Tensor.new_ones`` (``"ones"``) for 0-d shapes."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def new(self: Any, *size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Any:
            if _shape(size) is None:
                return op(self, *size, dtype=dtype, requires_grad=requires_grad, **kwargs)
            import msadapter

            result = getattr(msadapter, factory)((), dtype=self.dtype if dtype is None else dtype)
            return result.requires_grad_(True) if requires_grad else result

        return new

    return wrapper


def new_full(self: Any, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Any:
    """``Tensor.new_full``: ``torch.full(size, fill_value)`` of ``self``'s dtype unless ``dtype`` is given."""
    del device, layout, pin_memory  # one device (the CPU), strided, no pinned memory on MindSpore's CPU backend
    import msadapter

    result = msadapter.full(tuple(size), fill_value, dtype=self.dtype if dtype is None else dtype)
    return result.requires_grad_(True) if requires_grad else result
