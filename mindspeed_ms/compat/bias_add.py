"""``activation + bias`` (a vector along the last dimension) through MindSpore's BiasAdd on the CPU backend.

Megatron adds each linear layer's bias as ``output + bias`` (``[sequence, batch, hidden]`` plus ``[hidden]``),
and the MLP adds ``intermediate + bias`` before the activation. MSAdapter's ``+`` runs MindSpore's AddExt,
whose broadcasting CPU kernel is slow (a 512 x 2048 activation: 8-25 ms, against 1 ms for an add of two
tensors of that shape), and autograd reduces the bias gradient with a ReduceSum over both leading
dimensions (~10 ms). MindSpore's ``BiasAdd`` over the activation viewed as 2-D (``[rows, hidden]``, the
bias along dimension 1) adds the same values (~1.7 ms) and its gradient is ``BiasAddGrad``.

Only that shape is taken: a contiguous float32/float16 tensor of two or more dimensions plus a 1-D tensor of the
same dtype as long as its last dimension, with no ``alpha``. The sum is the same float addition (bit-identical
values). Everything else goes to the wrapped ``add`` unchanged.

Below :data:`MIN_ELEMENTS` elements (the tiny model's activations, ``[32, 4, 64]``) the activation is handed to
``BiasAdd`` with ``data_format="NHWC"`` (the bias along the last dimension, 2 to 5 dimensions) as it is: one kernel
where the broadcasting add took AddExt plus the two views ``grad_clone`` puts in front of an add whose operands
both require grad (BiasAdd hands the bias a gradient of its own, ``BiasAddGrad``, so no ``Clone`` is needed), and
one BiasAddGrad kernel in the backward where the broadcast add's gradient reduced the bias with ReduceSum. The bias
gradient is the column sums in float32, PyTorch's within its summation order (not bit-identical to the
ReduceSum's either); a tiny training run's losses move in their last bits, within the parity tolerances
(tests/test_parity.py).

float32 runs on the host: the optional C row loops (``_host_rows``, two threads for large tensors; else NumPy, the
same bits) add over the tensors' memory into a new tensor's (``host_outputs.new_float32``),
as an autograd Function whose input gradient is the output gradient itself and whose bias gradient is the
column sums of the gradient viewed as 2-D, accumulated in float64 and rounded once (MindSpore's BiasAddGrad
took 5-16 ms for megatron's ``[512, 2048]`` activations; NumPy ~0.6 ms). PyTorch accumulates in float32:
ours is the sum to float32 rounding, PyTorch's within its summation order of it.
float16 keeps MindSpore's BiasAdd and BiasAddGrad kernels.

megatron's own linear layers add their bias inside an autograd Function and take its gradient as
``grad_output.sum(dim=0)`` (2-D there): :func:`column_sum_wrapper` computes that sum the same way on the host.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_memory import contiguity_read

__all__ = ["MIN_ELEMENTS", "bias_add_wrapper", "column_sum_wrapper"]

#: from this many elements float32 adds on the host (below: MindSpore's BiasAdd kernel as the tensor is)
MIN_ELEMENTS = 65536

#: the most dimensions MindSpore's BiasAdd takes
_BIAS_ADD_RANK = 5


@functools.lru_cache(maxsize=1)
def _dtypes() -> tuple[Any, ...]:
    import mindspore

    return (mindspore.float32, mindspore.float16)


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The float32 host Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    from mindspeed_ms.compat import host_arithmetic
    from mindspeed_ms.compat.host_memory import host_array
    from mindspeed_ms.compat.host_outputs import new_float32

    add, column_sum = host_arithmetic.bias_add, host_arithmetic.column_sum

    class HostBiasAdd(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``input + bias`` in NumPy; gradients: the output gradient, and its column sums for the bias."""

        @staticmethod
        def forward(ctx: Any, input: Any, bias: Any) -> Any:
            values = host_array(input)
            result, out = new_float32(values.shape)
            add(values, host_array(bias, sync=False), out)
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            shape = grad._shape
            if grad._dtype is _dtypes()[0] and contiguity_read()(grad):
                bias_grad, out = new_float32((shape[-1],))
                column_sum(host_array(grad).reshape(-1, shape[-1]), out)
                return grad, bias_grad
            return grad, grad.reshape(-1, shape[-1]).sum(0)

    return HostBiasAdd


@functools.lru_cache(maxsize=1)
def _bias_add() -> Any:
    from mindspore import ops

    return ops.BiasAdd()


@functools.lru_cache(maxsize=1)
def _bias_add_last() -> Any:
    """BiasAdd along the last dimension of a 2- to 5-dimensional tensor (no reshape around it)."""
    from mindspore import ops

    return ops.BiasAdd(data_format="NHWC")


def bias_add_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.__add__`` / ``Tensor.add`` / ``torch.add``: a bias vector along the last dimension uses BiasAdd.

    Args:
        op: the add to wrap (``op(input, other, *args, **kwargs)``).

    Returns:
        ``op``'s signature.
    """

    @functools.wraps(op)
    def add(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        # every tensor add of a step comes here (13 a tiny step): MindSpore's own attributes read directly (``dtype``
        # is MindSpore's Python property returning ``_dtype``), no getattr call; a missing one: the wrapped add
        try:
            bias_shape = other._shape
        except AttributeError:
            bias_shape = None
        if args or kwargs or bias_shape is None or len(bias_shape) != 1:
            return op(input, other, *args, **kwargs)
        try:
            shape, dtype = input._shape, input._dtype
        except AttributeError:
            return op(input, other)
        if (shape is None or len(shape) < 2 or shape[-1] != bias_shape[0] or dtype not in _dtypes()
                or other._dtype is not dtype or not contiguity_read()(input)):
            return op(input, other)
        elements = math.prod(shape)
        if elements < MIN_ELEMENTS:
            return _bias_add_last()(input, other) if elements and len(shape) <= _BIAS_ADD_RANK else op(input, other)
        if dtype is _dtypes()[0] and contiguity_read()(other):
            return _function().apply(input, other)
        return _bias_add()(input.reshape(-1, shape[-1]), other).reshape(tuple(shape))

    return add


def column_sum_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.sum``: ``grad.sum(dim=0)`` of a large contiguous 2-D float32 tensor that requires no gradient
    (megatron's bias gradient) is summed on the host, in float64, rounded once.

    Args:
        op: ``Tensor.sum(self, dim=None, keepdim=False, dtype=None)`` as wrapped.

    Returns:
        ``op``'s signature.
    """

    @functools.wraps(op)
    def sum(input: Any, *args: Any, **kwargs: Any) -> Any:
        if args:
            dim = args[0] if len(args) == 1 and not kwargs else None
        else:
            dim = kwargs.get("dim") if len(kwargs) == 1 else None
        shape = getattr(input, "_shape", None)
        if (dim != 0 or dim is False or shape is None or len(shape) != 2 or input._dtype is not _dtypes()[0]
                or shape[0] * shape[1] < MIN_ELEMENTS or input.requires_grad or not contiguity_read()(input)):
            return op(input, *args, **kwargs)
        return _column_sum()(input)

    return sum


@functools.lru_cache(maxsize=1)
def _column_sum() -> Callable[[Any], Any]:
    from mindspeed_ms.compat import host_arithmetic
    from mindspeed_ms.compat.host_memory import host_array
    from mindspeed_ms.compat.host_outputs import new_float32

    column_sum = host_arithmetic.column_sum

    def host_column_sum(input: Any) -> Any:
        values = host_array(input)
        result, out = new_float32((values.shape[1],))
        column_sum(values, out)
        return result

    return host_column_sum
