"""megatron's linear layers on the host: forward and backward of the plain case in one autograd Function of ours.

megatron-core's column and row parallel layers call ``linear_with_grad_accumulation_and_async_allreduce``
(``megatron/core/tensor_parallel/layers.py``), which applies ``LinearWithGradAccumulationAndAsyncCommunication``:
``input @ weight.t() + bias`` forward; backward ``grad_output @ weight``, then ``grad_output`` made contiguous and
2-D (``prepare_input_tensors_for_wgrad_compute``), ``grad_output.t() @ input`` and ``grad_output.sum(dim=0)``.
On MindSpore's CPU backend each of those torch calls goes through a wrapper of ours (the host GEMM of
:mod:`.fast_matmul`, ``contiguous``, ``view``, ``t``, the bias add and the column sum), the Function through
MSAdapter's ``custom_fwd``/``custom_bwd`` and our Function checks (:mod:`.function_grads`): nine applies a
training step of the tiny example, ~30 Python calls each, a quarter of the step's own-code samples.

:func:`linear_wrapper` applies :class:`HostLinear` instead where the call is the plain case: no sequence
parallelism, no all-reduce of the input gradient (tensor-parallel size 1), no gradient accumulation fusion, no
deferred weight gradient (``grad_output_buffer`` None), autocast off, float32 tensors with a 2-D weight, a 1-D
bias or None, at least 2-D input, no empty dimension, the input and the weight contiguous. Every other call goes
to megatron's function unchanged.

The arithmetic is the one the wrapped torch calls did: the same host GEMM (:func:`.host_kernels.matmul`, the
weight and ``grad_output`` read through BLAS's transpose flag, the leading dimensions folded) into new float32
tensors of MindSpore's memory, the bias added in float32 (:func:`.host_arithmetic.bias_add`; MindSpore's BiasAdd
below :data:`.bias_add.MIN_ELEMENTS` elements: the same correctly rounded float32 additions), the bias gradient
summed in float64 and rounded once (:func:`.host_arithmetic.column_sum`, which the column sum wrapper used from
:data:`.bias_add.MIN_ELEMENTS` elements; below, MindSpore's float32 ReduceSum summed it: there the bias gradient
is now the more exact sum, within float32 rounding of the old one). Gradients are computed for the inputs that
require one. As PyTorch's ``save_for_backward``, the backward refuses an input or weight written in place after
the forward (:class:`~.errors.TorchRefusalError`, PyTorch's message).

The Function's bodies (:func:`python_forward`, :func:`python_backward`) and the wrapper's tests
(:func:`python_linear_wrapper`) run in one C call each where ``_host_bodies`` and ``_host_wrappers`` are built
(:func:`bodies`, :func:`linear_wrapper`): the same calls in the same order, the arithmetic in the same functions (the
Python lines cost a few microseconds each inside a training step; the tiny example runs each nine times a step).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat import host_extensions
from mindspeed_ms.compat.errors import TorchRefusalError
from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_arithmetic import bias_add, column_sum
from mindspeed_ms.compat.host_kernels import matmul
from mindspeed_ms.compat.host_memory import contiguity_read, host_array
from mindspeed_ms.compat.host_outputs import new_float32

#: the C bodies' extension (``_host_bodies``, of its ABI), or None where not built
_compiled = host_extensions.bodies_module()

__all__ = ["TARGET", "bodies", "compiled_bodies", "compiled_linear_wrapper", "has_compiled_bodies",
           "has_compiled_wrapper", "is_linear_wrapper", "linear_wrapper", "plain_operands", "plain_weight",
           "python_backward", "python_forward", "python_linear_wrapper"]

#: the megatron function wrapped
TARGET = "megatron.core.tensor_parallel.layers.linear_with_grad_accumulation_and_async_allreduce"
_MODIFIED = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
             "the input or the weight of megatron's linear layer was written after its forward")


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


@functools.lru_cache(maxsize=1)
def _autocast_enabled() -> Callable[[str], bool]:
    import msadapter

    return msadapter.is_autocast_enabled  # type: ignore[no-any-return]


def _refuse() -> None:
    raise TorchRefusalError("LinearWithGradAccumulationAndAsyncCommunication.backward", _MODIFIED)


def python_forward(ctx: Any, input: Any, weight: Any, bias: Any) -> Any:
    """:class:`HostLinear`'s forward: ``input @ weight.t() + bias`` into a new float32 tensor; the inputs and their
    versions kept in ``ctx.kept``."""
    values, matrix = host_array(input), host_array(weight, sync=False)
    result, out = new_float32((*values.shape[:-1], matrix.shape[0]))
    matmul(values, matrix.T, out)
    if bias is not None:
        bias_add(out, host_array(bias, sync=False), out)
    ctx.kept = (input, weight, input._version, weight._version, bias is not None)
    return result


def python_backward(ctx: Any, grad: Any) -> Any:
    """:class:`HostLinear`'s backward: the gradients of input, weight and bias, None where not needed."""
    input, weight, input_version, weight_version, has_bias = ctx.kept
    del ctx.kept
    if input._version != input_version or weight._version != weight_version:
        _refuse()
    needs = ctx.needs_input_grad
    gradient = host_array(grad)
    matrix = host_array(weight, sync=False)
    grad_input = grad_weight = grad_bias = None
    if needs[0]:
        grad_input, out = new_float32(tuple(input._shape))
        matmul(gradient, matrix, out)
    if needs[1] or (has_bias and needs[2]):
        rows = gradient.reshape(-1, gradient.shape[-1])  # a copy where not contiguous, as .contiguous()
        if needs[1]:
            values = host_array(input, sync=False)
            grad_weight, out = new_float32(matrix.shape)
            matmul(rows.T, values.reshape(-1, values.shape[-1]), out)
        if has_bias and needs[2]:
            grad_bias, out = new_float32((rows.shape[1],))
            column_sum(rows, out)
    return grad_input, grad_weight, grad_bias


def bodies(compiled: bool = True) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """:class:`HostLinear`'s forward and backward: the C ones (:func:`compiled_bodies` over this module's host
    functions) where built and ``compiled``, else :func:`python_forward` and :func:`python_backward` (the same calls
    in the same order)."""
    if compiled and _compiled is not None:
        return compiled_bodies(host_array, new_float32, matmul, bias_add, column_sum, _refuse)
    return python_forward, python_backward


def compiled_bodies(host_array: Callable[..., Any], new_float32: Callable[..., Any], matmul: Callable[..., Any],
                    bias_add: Callable[..., Any], column_sum: Callable[..., Any], refuse: Callable[[], None]
                    ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The C forward and backward (``_host_bodies.Linear``) calling these functions where the Python bodies call
    this module's (``refuse()`` raises the refusal).

    Raises:
        RuntimeError: ``_host_bodies`` is not built here (:func:`has_compiled_bodies`).
        TypeError: one of them is not callable.
    """
    if _compiled is None:
        raise RuntimeError("mindspeed_ms.compat._host_bodies is not built: pip install -e . with a C compiler")
    linear = _compiled.Linear(host_array, new_float32, matmul, bias_add, column_sum, refuse)
    return linear.forward, linear.backward


def has_compiled_bodies() -> bool:
    """Whether :class:`HostLinear` runs the C bodies (``_host_bodies`` built, of its ABI)."""
    return _compiled is not None


def has_compiled_wrapper() -> bool:
    """Whether :func:`linear_wrapper` makes the C wrapper (``_host_wrappers`` built, of its ABI)."""
    return host_extensions.wrappers_module() is not None


@functools.lru_cache(maxsize=2)
def _function(compiled: bool = True) -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    forward, backward = bodies(compiled)

    class HostLinear(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``input @ weight.t() + bias`` with the host GEMM, and its three gradients."""

    HostLinear.forward, HostLinear.backward = staticmethod(forward), staticmethod(backward)
    return HostLinear


def _is_plain(input: Any, weight: Any, bias: Any, float32: Any, contiguous: Callable[[Any], bool]) -> bool:
    """Whether the tensors are the plain case (see the module's docstring)."""
    try:
        shape, weight_shape, dtype = input._shape, weight._shape, input._dtype
    except AttributeError:
        return False
    if (dtype is not float32 or weight._dtype is not float32 or len(weight_shape) != 2 or len(shape) < 2
            or shape[-1] != weight_shape[1] or 0 in shape or 0 in weight_shape
            or not contiguous(input) or not contiguous(weight)):
        return False
    if bias is None:
        return True
    bias_shape = getattr(bias, "_shape", None)
    return (bias_shape is not None and len(bias_shape) == 1 and bias_shape[0] == weight_shape[0]
            and bias._dtype is float32 and contiguous(bias))


def plain_operands(input: Any, weight: Any, bias: Any) -> bool:
    """Whether :func:`linear_wrapper` takes ``input``, ``weight`` and ``bias`` (None: no bias) to :class:`HostLinear`
    when the call's flags are off: the plain tensors (see the module's docstring) and autocast off."""
    return _is_plain(input, weight, bias, _float32(), contiguity_read()) and not _autocast_enabled()("cuda")


def plain_weight(weight: Any, columns: int) -> bool:
    """Whether ``weight`` is a plain weight (see the module's docstring) for an input of ``columns`` columns."""
    shape = getattr(weight, "_shape", None)
    return (shape is not None and len(shape) == 2 and shape[1] == columns and shape[0] > 0 and columns > 0
            and weight._dtype is _float32() and contiguity_read()(weight))


#: the wrappers :func:`linear_wrapper` made (:func:`is_linear_wrapper`)
_WRAPPERS: list[Any] = []


def is_linear_wrapper(function: Any) -> bool:
    """Whether ``function`` is a wrapper :func:`linear_wrapper` made (megatron's linear function as our patch
    installed it)."""
    for made in _WRAPPERS:
        if made is function:
            return True
    return False


def linear_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``linear_with_grad_accumulation_and_async_allreduce``: the plain case through :class:`HostLinear`.

    Where ``_host_wrappers`` is built the wrapper is :func:`compiled_linear_wrapper`'s (the tests and calls of
    :func:`python_linear_wrapper` in C, no Python frame), else :func:`python_linear_wrapper`'s.

    Args:
        op: megatron's ``linear_with_grad_accumulation_and_async_allreduce(input, weight, bias,
            gradient_accumulation_fusion, allreduce_dgrad, sequence_parallel, grad_output_buffer=None,
            wgrad_deferral_limit=0, async_grad_allreduce=None)``.

    Returns:
        ``op``'s signature and results.
    """
    make = compiled_linear_wrapper if has_compiled_wrapper() else python_linear_wrapper
    made = make(op, _function().apply, _float32(), contiguity_read(), _autocast_enabled())
    wrapper = functools.update_wrapper(made, op)
    _WRAPPERS.append(wrapper)
    return wrapper


def compiled_linear_wrapper(op: Callable[..., Any], apply: Callable[..., Any], float32: Any,
                            contiguous: Callable[[Any], bool], autocast: Callable[[str], bool]) -> Callable[..., Any]:
    """:func:`python_linear_wrapper`'s function as one C object (``_host_wrappers.Linear``): megatron's parameters
    bound in C; a call that does not bind goes to ``op`` as it came (which raises its own TypeError).

    Raises:
        RuntimeError: ``_host_wrappers`` is not built here (:func:`has_compiled_wrapper`).
    """
    compiled = host_extensions.wrappers_module()
    if compiled is None:
        raise RuntimeError("mindspeed_ms.compat._host_wrappers is not built: pip install -e . with a C compiler")
    return compiled.Linear(op, apply, float32, contiguous, autocast)  # type: ignore[no-any-return]


def python_linear_wrapper(op: Callable[..., Any], apply: Callable[..., Any], float32: Any,
                          contiguous: Callable[[Any], bool], autocast: Callable[[str], bool]) -> Callable[..., Any]:
    """megatron's linear function with the plain case (the flags off, no deferral buffer, the tensors of
    :func:`_is_plain` with ``float32`` their dtype and ``contiguous`` MindSpore's reader, ``autocast("cuda")``
    false) going to ``apply(input, weight, bias)``, anything else to ``op`` with every argument by keyword."""

    def linear(input: Any, weight: Any, bias: Any, gradient_accumulation_fusion: Any, allreduce_dgrad: Any,
               sequence_parallel: Any, grad_output_buffer: Any = None, wgrad_deferral_limit: Any = 0,
               async_grad_allreduce: Any = None) -> Any:
        if (grad_output_buffer is None and async_grad_allreduce is None and not gradient_accumulation_fusion
                and not allreduce_dgrad and not sequence_parallel
                and _is_plain(input, weight, bias, float32, contiguous) and not autocast("cuda")):
            return apply(input, weight, bias)
        return op(input=input, weight=weight, bias=bias, gradient_accumulation_fusion=gradient_accumulation_fusion,
                  allreduce_dgrad=allreduce_dgrad, sequence_parallel=sequence_parallel,
                  grad_output_buffer=grad_output_buffer, wgrad_deferral_limit=wgrad_deferral_limit,
                  async_grad_allreduce=async_grad_allreduce)

    return linear
