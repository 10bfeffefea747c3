"""``Tensor.view(dtype)``: the same memory read as another dtype, as PyTorch (CPU; cases in
tests/conformance/cases/fix_dtype_views.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13: ``x.view(torch.int32)`` raised
``TypeError: 'Int' object is not iterable`` (MSAdapter reads the argument as a shape). MindSpeed's
``--reuse-fp32-param`` (``mindspeed/optimizer/distrib_optimizer.py``) views the fp32 main parameters as int32 and
adds to them in place, to keep the bf16 parameters in the same memory.

On the CPU backend a tensor's memory is host memory: the view is a NumPy view of it in the new dtype, made a
MindSpore tensor over the same memory (``Tensor.from_numpy`` shares it), so in-place writes through either reach
the other, as PyTorch's. As PyTorch's, the result records no gradient (``requires_grad`` False); with a different
element size the last dimension scales (float32 -> int16: ``(3, 4)`` -> ``(3, 8)``) and PyTorch's refusals are
kept (a 0-d tensor, a last dimension that is not contiguous or not divisible). What cannot share memory here is
refused with :class:`~mindspeed_ms.compat.errors.UnsupportedOpOptionError`, nothing made: bfloat16 on either side
(NumPy has no such dtype), a tensor that is not contiguous (``Tensor.from_numpy`` copies such a layout: checked on
the result's address, so writes could not reach the original; PyTorch views it), and tensors that do not live in
host memory (Ascend).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["dtype_view_wrapper", "view_as_dtype"]

_OP = "Tensor.view"
#: where the result keeps the tensor whose memory it reads (the NumPy view does not keep it alive)
_VIEWED = "_mindspeed_ms_dtype_view_of"


def dtype_view_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.view``: one dtype argument (``x.view(torch.int32)``, ``x.view(dtype=...)``) goes to
    :func:`view_as_dtype`; shapes go on to ``op`` (the wrapper's only cost on the ~40 views of a training step: one
    frame and a type test)."""
    import mindspore

    dtype_type = mindspore.dtype.Type

    @functools.wraps(op)
    def view(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], dtype_type) and len(args) == 1 and not kwargs:
            return view_as_dtype(self, args[0])
        if kwargs and not args and list(kwargs) == ["dtype"]:
            return view_as_dtype(self, kwargs["dtype"])
        return op(self, *args, **kwargs)

    return view


def _refuse(message: str) -> Any:
    from mindspeed_ms.compat.errors import TorchRefusalError

    return TorchRefusalError(_OP, message)


def _unsupported(what: str) -> Any:
    from mindspeed_ms.compat.errors import UnsupportedOpOptionError

    return UnsupportedOpOptionError(_OP, "view(dtype)", what)


def view_as_dtype(tensor: Any, dtype: Any) -> Any:
    """Return ``tensor``'s memory read as ``dtype`` (PyTorch's ``Tensor.view(dtype)``), sharing that memory.

    Raises:
        TorchRefusalError: where PyTorch refuses (a 0-d tensor, a non-contiguous or indivisible last dimension
            with another element size), with PyTorch's message.
        UnsupportedOpOptionError: where this backend cannot share the memory (bfloat16, not host memory).
    """
    import mindspore
    import numpy as np

    from mindspeed_ms.compat.host_memory import host_array, host_memory_reason
    from mindspeed_ms.compat.inplace_checks import pytorch_dtype_name

    source = tensor.dtype
    if dtype == source:
        return tensor.detach()  # PyTorch's view(dtype) records no gradient, even to its own dtype
    reason = host_memory_reason()
    if reason is not None:
        raise _unsupported(f"not available here: {reason} (the view needs the tensor's host memory)")
    if mindspore.bfloat16 in (source, dtype):
        raise _unsupported("not available for bfloat16 on this backend (NumPy, which shares the memory, has no "
                           "bfloat16): view another dtype of the same size, e.g. int16, and convert")
    try:
        target = np.dtype(mindspore.dtype_to_nptype(dtype))
    except (TypeError, KeyError) as error:
        raise _unsupported(f"not available for {dtype} on this backend") from error
    array = host_array(tensor)
    old, new = array.dtype.itemsize, target.itemsize
    names = f"{pytorch_dtype_name(source)} as {pytorch_dtype_name(dtype)}"
    if old != new:
        if array.ndim == 0:
            raise _refuse(f"self.dim() cannot be 0 to view {names} (different element sizes)")
        if array.strides[-1] != old and array.shape[-1] != 1:
            raise _refuse(f"self.stride(-1) must be 1 to view {names} (different element sizes), but got "
                          f"{array.strides[-1] // old}")
        if new > old and (array.shape[-1] * old) % new:
            raise _refuse(f"self.size(-1) must be divisible by {new // old} to view {names} (different element "
                          f"sizes), but got {array.shape[-1]}")
    viewed = array.view(target)
    result = mindspore.Tensor.from_numpy(viewed)
    if result.data_ptr() != viewed.ctypes.data:  # MindSpore copied it (a layout it does not share): not a view
        raise _unsupported("not available for this tensor's layout on this backend (its memory could not be "
                           "shared): call .contiguous() first")
    setattr(result, _VIEWED, tensor)
    return result
