"""``torch.norm`` of a large float32 tensor computed on the host, closer to the exact norm than PyTorch's.

megatron-core's gradient norm without apex (``local_multi_tensor_l2_norm``, called by ``get_grad_norm_fp32``)
takes ``torch.norm(tensor)`` of each gradient; with DDP's buckets coalesced (:mod:`.megatron_speed`) that is one
call over the whole bucket, 6.4 million floats at issue 24's mid size. MindSpore's CPU kernels (Mul, ReduceSum,
Sqrt over a fresh 6.4M-float temporary) take 15-23 ms there, PyTorch ~4 ms.

Here the sum of squares runs over the tensor's host memory (:func:`.host_arithmetic.sum_of_squares`): in the
optional C extension ``_host_rows`` the squares in float64 (each exact), summed in float64 over fixed blocks split
between two threads (relative error ~1e-16 per block's length: the float32 result is the float32 nearest the exact
norm but for a double rounding one time in millions); without it in NumPy, rows of 128 elements each summed in
float32 (``einsum``, no temporary of the tensor's size), the row sums added in float64 (every row sum within
``128 * 2**-24`` = 7.6e-6 relative, the worst case; measured on gradient-like data ~1e-9). The square root is taken
in float64 and rounded once to float32. PyTorch's ``torch.norm`` accumulates in float32 lanes: on the same data
4.8e-4 from the exact norm (tests/test_compat_host_norm.py measures both against the exact value and asserts ours
is at least as close). The rule this module keeps: **never further from the exact norm than PyTorch's**.

Taken only for ``torch.norm(t)`` / ``torch.norm(t, 2)`` / ``torch.norm(t, "fro")`` / ``t.norm(p=2)`` (``dim``, ``out``,
``dtype`` None and ``keepdim`` False, by position or keyword: megatron's ``check_grads`` of every bucket) of a
contiguous float32 tensor of at least :data:`MIN_ELEMENTS` elements that does not require a gradient; everything
else goes to the wrapped ``norm``. Small tensors too: megatron takes the norm of its list of per-bucket norms
(``torch.norm(torch.tensor(l2))``, two elements at the tiny size) every step, where MindSpore's three kernels cost
~140 us whatever the size below ~4096 elements and the host path ~14 us. Non-finite results are PyTorch's: NaN
anywhere gives NaN, an infinity gives inf, and a sum of squares beyond float32's range gives inf (PyTorch's float32
accumulation overflows there).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.host_memory import contiguity_read

__all__ = ["MIN_ELEMENTS", "l2_norm_wrapper", "norm_wrapper"]

#: from this many elements (any non-empty tensor: the host path is the cheaper at every size measured)
MIN_ELEMENTS = 1

_TWO_NORMS = (2, 2.0, "fro")


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


#: the largest finite float32: a sum of squares above it overflows in PyTorch's float32 accumulation
_FLOAT32_MAX = 3.4028234663852886e38


def _norm_of(values: Any) -> Any:
    """The float32 2-norm of the float32 array ``values`` (a NumPy float32 scalar)."""
    import numpy as np

    from mindspeed_ms.compat.host_arithmetic import sum_of_squares

    total = sum_of_squares(values)
    if total > _FLOAT32_MAX:
        total = math.inf
    return np.float32(math.sqrt(total))


def _host_norm(input: Any) -> Any:
    """The float32 2-norm of ``input`` as a 0-d tensor."""
    from mindspore import Tensor

    from mindspeed_ms.compat.host_memory import host_array

    return Tensor(_norm_of(host_array(input, flat=True)))


def _taken(input: Any) -> bool:
    """Whether ``torch.norm(input)`` runs on the host: a contiguous float32 tensor of at least :data:`MIN_ELEMENTS`
    elements that does not require a gradient."""
    shape = getattr(input, "_shape", None)
    return (shape is not None and getattr(input, "_dtype", None) is _float32() and math.prod(shape) >= MIN_ELEMENTS
            and not input.requires_grad and contiguity_read()(input))


#: ``torch.norm``'s parameters after ``input``, in order, and the values that leave the 2-norm of the whole tensor
_PARAMETERS = ("p", "dim", "keepdim", "out", "dtype")
_WHOLE = {"p": "fro", "dim": None, "keepdim": False, "out": None, "dtype": None}


def _whole_two_norm(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``norm(input, *args, **kwargs)`` asks for the 2-norm of the whole tensor as a 0-d float32 tensor:
    ``p`` 2 or ``"fro"``, ``dim`` and ``out`` and ``dtype`` None, ``keepdim`` False, positional or by keyword
    (``Tensor.norm(p=2)`` hands on every parameter by keyword: megatron's ``check_grads``)."""
    if len(args) > len(_PARAMETERS) or set(kwargs) - set(_PARAMETERS):
        return False
    given = dict(zip(_PARAMETERS, args))
    if set(given) & set(kwargs):
        return False  # a parameter given twice: the wrapped norm raises PyTorch's error
    given.update(kwargs)
    p = given.get("p", "fro")
    if type(p) not in (int, float, str) or p not in _TWO_NORMS:  # a bool is not a power here (True == 1)
        return False
    return all(given[name] is _WHOLE[name] for name in given if name != "p")


def norm_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.norm``: the 2-norm of a large contiguous float32 tensor runs on the host.

    Args:
        op: MSAdapter's ``norm(input, p='fro', dim=None, keepdim=False, out=None, dtype=None)`` (as wrapped by
            :func:`mindspeed_ms.compat.msadapter_cpu.frobenius_norm_wrapper`).

    Returns:
        ``op``'s signature.
    """

    @functools.wraps(op)
    def norm(input: Any, *args: Any, **kwargs: Any) -> Any:
        if not _whole_two_norm(args, kwargs) or not _taken(input):
            return op(input, *args, **kwargs)
        return _host_norm(input)

    return norm


#: megatron-core's own ``l2_norm_impl`` without Apex or Transformer Engine (``megatron/core/utils.py``)
_LOCAL_L2_NORM = ("megatron.core.utils", "local_multi_tensor_l2_norm")


def _rectangular(tensor_lists: Any) -> list[Any] | None:
    """The tensors of a list of lists of one length each (what ``torch.tensor`` of their norms takes), in order;
    else None (a ragged list: ``torch.tensor`` raises, as megatron's own path does)."""
    if not isinstance(tensor_lists, (list, tuple)) or not all(
            isinstance(tensors, (list, tuple)) for tensors in tensor_lists):
        return None
    if len(set(map(len, tensor_lists))) != 1:
        return None
    return [tensor for tensors in tensor_lists for tensor in tensors]


def l2_norm_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap megatron-core's ``local_multi_tensor_l2_norm`` (``clip_grads.l2_norm_impl`` without Apex): the same
    result without its tensors in between.

    megatron takes ``torch.norm`` of each tensor of each list, builds a tensor of those norms
    (``torch.tensor(l2)``), takes its norm and returns it as a one-element float32 tensor (and None). Where
    ``torch.norm`` of every tensor runs on the host (:func:`norm_wrapper`: contiguous float32, no gradient
    required), each norm and the norm of the norms are the host path's float32 values, computed here without a 0-d
    tensor per gradient and the tensor of them (MindSpore builds it by reading each one back: ~30 samples in 2,500
    of the tiny example's step); the same bits. Anything else (``per_tensor``, other tensors, a ragged list, no
    tensor at all) is megatron's.

    Args:
        op: megatron's ``local_multi_tensor_l2_norm(chunk_size, noop_flag, tensor_lists, per_tensor, *args)``;
            anything else is returned as is.
    """
    if (getattr(op, "__module__", None), getattr(op, "__name__", None)) != _LOCAL_L2_NORM or hasattr(
            op, "__wrapped__"):
        return op

    @functools.wraps(op)
    def l2_norm(chunk_size: Any, noop_flag: Any, tensor_lists: Any, per_tensor: Any, *args: Any) -> Any:
        tensors = _rectangular(tensor_lists)
        if per_tensor or args or not tensors or not all(map(_taken, tensors)):
            return op(chunk_size, noop_flag, tensor_lists, per_tensor, *args)
        import numpy as np
        from mindspore import Tensor

        from mindspeed_ms.compat.host_memory import host_array

        # the first read waits for queued kernels (host_array's sync), the others read what it waited for
        norms = np.array([_norm_of(host_array(tensor, flat=True, sync=index == 0))
                          for index, tensor in enumerate(tensors)], np.float32)
        return Tensor(np.array([_norm_of(norms)], np.float32)), None

    return l2_norm
