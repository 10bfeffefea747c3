"""``Tensor.to(dtype)`` outside autograd's record as a NumPy conversion over the host memory (MindSpore's CPU backend).

MindSpore 2.7.1's CPU ``Cast`` costs ~360 us a call whatever the size (a 0-d tensor too), where its ``Mul`` costs
~25 us and PyTorch's cast ~2 us. megatron's ``loss_func`` (``pretrain_gpt.py``: ``loss[1].clone().detach()
.to(torch.int)``) casts every micro-batch, and megatron's loops convert their counters and masks the same way.

Here the conversion is NumPy's ``copyto(..., casting="unsafe")`` from the tensor's host memory into a new tensor of
MindSpore's memory (:func:`.host_outputs.new_empty`): C's conversions, which are PyTorch's CPU kernels' ones for the
pairs taken: floats rounded to the nearest (ties to even) between float16, float32 and float64 (NaN, infinities and
subnormals kept); integers and bools to floats rounded to the nearest; floats to int32/int64 truncated toward zero
(a value outside the integer's range is undefined behaviour in both); anything to bool ``!= 0`` (NaN: True);
integers between integer types wrapped modulo their width. Floats to the narrow integers (int8, int16, uint8) keep
MindSpore's kernel (C leaves their out-of-range values to each implementation), as do bfloat16 (NumPy has none), a
tensor that records a gradient (the cast is a node of the graph), a non-contiguous one (PyTorch's result keeps its
strides), and every other form of ``to`` (a device, a
tensor, ``copy=``, ``non_blocking=``, ``memory_format=``: the wrapped method, then :mod:`.tensor_identity`'s rules).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["float_operand", "host_cast", "to_wrapper"]


@functools.lru_cache(maxsize=1)
def _kinds() -> tuple[dict[Any, Any], frozenset[Any], frozenset[Any]]:
    """(MindSpore dtype -> NumPy dtype for the dtypes taken, the floating ones, the narrow integers)."""
    import mindspore
    import numpy as np

    numpy_of = {mindspore.float16: np.float16, mindspore.float32: np.float32, mindspore.float64: np.float64,
                mindspore.int8: np.int8, mindspore.int16: np.int16, mindspore.int32: np.int32,
                mindspore.int64: np.int64, mindspore.uint8: np.uint8, mindspore.bool_: np.bool_}
    floating = frozenset((mindspore.float16, mindspore.float32, mindspore.float64))
    narrow = frozenset((mindspore.int8, mindspore.int16, mindspore.uint8))
    return numpy_of, floating, narrow


def host_cast(tensor: Any, dtype: Any) -> Any | None:
    """``tensor`` converted to ``dtype`` as a new tensor written on the host, or None where this does not apply (see
    the module's docstring: the caller's kernel then)."""
    from mindspeed_ms.compat.host_memory import host_array, host_memory_reason
    from mindspeed_ms.compat.inplace_checks import records_grad

    numpy_of, floating, narrow = _kinds()
    source = getattr(tensor, "_dtype", None)
    try:
        if source not in numpy_of or dtype not in numpy_of or source == dtype:
            return None
    except TypeError:  # an unhashable argument: not a dtype
        return None
    if (source in floating and dtype in narrow) or records_grad(tensor) or host_memory_reason() is not None:
        return None
    from mindspeed_ms.compat.host_memory import contiguity_read

    if not contiguity_read()(tensor):  # PyTorch's result keeps a strided layout: the kernel's path
        return None
    import numpy as np

    from mindspeed_ms.compat.host_outputs import new_empty

    result = new_empty(tuple(tensor._shape), dtype)
    with np.errstate(all="ignore"):  # C's conversion of each element, as PyTorch's kernel: no warning either
        np.copyto(host_array(result, sync=False), host_array(tensor), casting="unsafe")
    return result


def float_operand(other: Any, dtype: Any) -> Any:
    """``other`` as the float32/float64 ``dtype`` of the tensor it divides, converted on the host, where it is an
    integer or bool tensor outside autograd's record (PyTorch's type promotion converts it to ``dtype`` before it
    divides: the same quotient; MindSpore's Div inserted its ~360 us Cast: megatron's ``output_tensor /=
    num_tokens`` every micro-batch); else ``other`` itself."""
    if type(other) is int or type(other) is float:
        return other
    from mindspeed_ms.compat import host_cast_switch

    if not host_cast_switch.on_host():
        return other
    import mindspore

    from mindspeed_ms.compat.inplace_checks import FLOATING, category

    if dtype not in (mindspore.float32, mindspore.float64) or getattr(other, "_dtype", None) is None or category(
            other) >= FLOATING:
        return other
    converted = host_cast(other, dtype)
    return other if converted is None else converted


def to_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.to``: ``t.to(dtype)`` (the dtype alone, positional or ``dtype=``) through :func:`host_cast`
    where it applies; every other call to ``op``."""

    @functools.wraps(op)
    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) + len(kwargs) == 1 and (args or "dtype" in kwargs):
            result = host_cast(self, args[0] if args else kwargs["dtype"])
            if result is not None:
                return result
        return op(self, *args, **kwargs)

    return to
