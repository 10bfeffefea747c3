"""megatron's bias-dropout-add without dropout (``residual + (x + bias)``) as one autograd Function on the host.

megatron-core's transformer layer adds each sublayer's output to the residual stream through
``_bias_dropout_add_func(x_with_bias, residual, prob, training)`` (``megatron/core/fusions/fused_bias_dropout.py``;
its fused and unfused entries both call it): ``x + bias``, ``F.dropout(x, p=prob, training=training)``, then
``residual + out``. With dropout off (``prob == 0`` or not training: megatron's ``hidden_dropout=0.0``, evaluation)
the dropout returns its input, and on MindSpore's CPU backend what is left is four nodes of PyNative's autograd graph
a call (the bias add, and our ``Tensor.__add__`` wrapper's two views and the add: :mod:`.grad_clone`), twice a layer.

Here that case is one Function: the float32 additions ``x + bias`` then ``residual + that`` over the tensors' host
memory (the same correctly rounded operations in the same order: the same bits) into a new tensor of MindSpore's
memory (:mod:`.host_outputs`); the backward gives ``x`` and ``residual`` a copy of the output gradient each (as
PyTorch's add, each its own tensor; handing the engine's own gradient tensor back as ``x``'s made MindSpeed-LLM's
context-parallel parity run die by SIGSEGV at exit, 2 of 2 runs, and the copies 2 of 2 clean), and the bias gradient
is the float64 column sum rounded once (:func:`.host_arithmetic.column_sum`, the bits of :mod:`.bias_add`'s host
Function from :data:`.bias_add.MIN_ELEMENTS` elements; below it MindSpore's BiasAddGrad summed in float32: there the
more exact sum, within float32 rounding of it). Gradients are computed for the inputs that require one.
The bodies run in one C call each where ``_host_bodies`` is built (its ``BiasDropoutAdd``: the calls of
:func:`python_forward` and :func:`python_backward` in the same order, with this module's host functions; five
forwards and backwards a step of the tiny example, whose Python lines showed in its sampled profile), else in
Python; tests/test_compat_host_bda.py runs both.

Taken when the call computes exactly that: megatron-core's own function, dropout off, ``x`` and ``residual`` float32
contiguous tensors of one shape (at least 1-D, no empty dimension), the bias None or a contiguous float32 vector of
the last dimension's size. Everything else (dropout on: its random stream is the wrapped function's; a residual of
another dtype: megatron casts it) runs megatron's function.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat import host_extensions
from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_arithmetic import bias_add, column_sum, copy_into
from mindspeed_ms.compat.host_kernels import add
from mindspeed_ms.compat.host_memory import contiguity_read, host_array
from mindspeed_ms.compat.host_outputs import new_float32

#: the C bodies' extension (``_host_bodies``, of its ABI), or None where not built
_compiled = host_extensions.bodies_module()

__all__ = ["MODULE", "TARGET", "bias_dropout_add_wrapper", "bodies", "function", "has_compiled_bodies",
           "has_compiled_wrapper", "plain", "python_backward", "python_bias_dropout_add_wrapper", "python_forward"]

#: the module of megatron's bias-dropout-add, and the function wrapped
MODULE = "megatron.core.fusions.fused_bias_dropout"
TARGET = f"{MODULE}._bias_dropout_add_func"


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def plain(x: Any, bias: Any, residual: Any, prob: Any, training: Any) -> bool:
    """Whether :func:`bias_dropout_add_wrapper` takes this call to its Function (see the module's docstring)."""
    if training and prob != 0:
        return False
    float32, contiguous = _float32(), contiguity_read()
    try:
        shape = x._shape
        if x._dtype is not float32 or residual._dtype is not float32 or residual._shape != shape:
            return False
    except AttributeError:  # not MindSpore tensors
        return False
    if not shape or not math.prod(shape) or not contiguous(x) or not contiguous(residual):
        return False
    if bias is None:
        return True
    bias_shape = getattr(bias, "_shape", None)
    return (bias_shape is not None and len(bias_shape) == 1 and bias_shape[0] == shape[-1]
            and bias._dtype is float32 and contiguous(bias))


def python_forward(ctx: Any, x: Any, residual: Any, bias: Any) -> Any:
    """:class:`HostBiasDropoutAdd`'s forward: ``residual + (x + bias)`` (``residual + x`` without a bias) into a new
    float32 tensor; whether there was a bias kept in ``ctx.has_bias``."""
    values = host_array(x)
    result, out = new_float32(values.shape)
    if bias is not None:
        bias_add(values, host_array(bias, sync=False), out)
    else:
        copy_into(values, out)
    add(out, host_array(residual, sync=False))
    ctx.has_bias = bias is not None
    return result


def python_backward(ctx: Any, grad: Any) -> Any:
    """:class:`HostBiasDropoutAdd`'s backward: the gradients of x, residual and bias, None where not needed."""
    needs = ctx.needs_input_grad
    gradient = host_array(grad)
    grads: list[Any] = [None, None, None]
    outs = []
    for index in (0, 1):  # x and residual: each a copy of its own (never the engine's gradient itself)
        if needs[index]:
            grads[index], out = new_float32(gradient.shape)
            outs.append(out)
    copy_into(gradient, *outs)
    if ctx.has_bias and needs[2]:
        grads[2], out = new_float32((gradient.shape[-1],))
        column_sum(gradient.reshape(-1, gradient.shape[-1]), out)
    return tuple(grads)


def bodies(compiled: bool = True) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """:class:`HostBiasDropoutAdd`'s forward and backward: the C ones (``_host_bodies.BiasDropoutAdd`` over this
    module's host functions: the same calls in the same order) where built and ``compiled``, else
    :func:`python_forward` and :func:`python_backward`."""
    if compiled and _compiled is not None:
        bodies = _compiled.BiasDropoutAdd(host_array, new_float32, bias_add, add, copy_into, column_sum)
        return bodies.forward, bodies.backward
    return python_forward, python_backward


def has_compiled_bodies() -> bool:
    """Whether :class:`HostBiasDropoutAdd` runs the C bodies (``_host_bodies`` built, of its ABI)."""
    return _compiled is not None


@functools.lru_cache(maxsize=2)
def function(compiled: bool = True) -> Any:
    """The autograd Function, ``apply(x, residual, bias)`` (built on first use: MSAdapter's ``torch`` must be
    importable), with :func:`bodies` ``(compiled)``; :mod:`.host_add` applies it without a bias."""
    forward, backward = bodies(compiled)

    class HostBiasDropoutAdd(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``residual + (x + bias)`` (``residual + x`` without a bias) and the gradients of x, residual and bias."""

    HostBiasDropoutAdd.forward, HostBiasDropoutAdd.backward = staticmethod(forward), staticmethod(backward)
    return HostBiasDropoutAdd


def bias_dropout_add_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap megatron's ``_bias_dropout_add_func(x_with_bias, residual, prob, training)``: its own function only
    (anything else is returned as is); the plain case (:func:`plain`) as one Function, every other call to ``op``.
    The tests run in one C call where ``_host_wrappers`` is built (:func:`has_compiled_wrapper`), else in
    :func:`python_bias_dropout_add_wrapper`'s function."""
    if getattr(op, "__module__", None) != MODULE or hasattr(op, "__wrapped__"):
        return op
    compiled = host_extensions.wrappers_module()
    if compiled is None:
        return python_bias_dropout_add_wrapper(op)
    return functools.update_wrapper(compiled.BiasDropoutAdd(op, function, _float32(), contiguity_read()), op)


def has_compiled_wrapper() -> bool:
    """Whether :func:`bias_dropout_add_wrapper` makes the C wrapper (``_host_wrappers`` built, of its ABI)."""
    return host_extensions.wrappers_module() is not None


def python_bias_dropout_add_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """:func:`bias_dropout_add_wrapper`'s wrapper in Python (for megatron's own function)."""

    @functools.wraps(op)
    def bias_dropout_add(x_with_bias: Any, residual: Any, prob: Any, training: Any) -> Any:
        if isinstance(x_with_bias, tuple) and len(x_with_bias) == 2:
            x, bias = x_with_bias
            if plain(x, bias, residual, prob, training):
                return function().apply(x, residual, bias)
        return op(x_with_bias, residual, prob, training)

    return bias_dropout_add
