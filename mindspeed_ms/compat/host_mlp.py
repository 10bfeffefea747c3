"""megatron's MLP block (``MLP.forward``: fc1, its bias, gelu, fc2) as one autograd Function on the host.

megatron-core's ``MLP.forward`` (``megatron/core/transformer/mlp.py``) runs ``linear_fc1`` (a ``ColumnParallelLinear``
whose bias it returns), adds that bias, applies ``activation_func`` (gelu) and runs ``linear_fc2`` (a
``RowParallelLinear`` returning its bias to the layer's bias-dropout-add). On MindSpore's CPU backend each piece is a
node of PyNative's autograd graph with its own forward and backward dispatch: fc1 and fc2 are :mod:`.host_linear`'s
Function, the bias add MindSpore's BiasAdd (:mod:`.bias_add`: its host Function from
:data:`.bias_add.MIN_ELEMENTS` elements), gelu :mod:`.gelu`'s Function. At the tiny example's size (hidden 64,
``[32, 4, 256]`` activations) the block took ~1.5 ms forward and backward, of which the arithmetic ~0.2 ms.

Here the plain case is one Function: the same host GEMMs (:func:`.host_kernels.matmul`), the bias added in float32
(:func:`.host_arithmetic.bias_add`), the erf gelu and PyTorch's gelu gradient in ``_host_gelu`` (the kernels
:mod:`.gelu` runs), the bias gradient summed in float64 and rounded once (:func:`.host_arithmetic.column_sum`);
the intermediates (fc1's output with its bias, gelu's output and ``1 + erf``) stay NumPy arrays of the Function.
The output and the gradients of the input and of fc1's and fc2's weights are the bits the four Functions give;
fc1's bias gradient is those bits where the bias add ran on the host (from :data:`.bias_add.MIN_ELEMENTS`
elements), and below it the float64 sum rounded once where MindSpore's BiasAddGrad summed in float32 (within
float32 rounding of it, the more exact sum). Gradients are computed for the inputs that require one. As PyTorch's
``save_for_backward``, the backward refuses the input or a weight written in place after the forward
(:class:`~.errors.TorchRefusalError`, PyTorch's message).
The bodies run in one C call each where ``_host_bodies`` is built (its ``MLP``: the calls of :func:`python_forward`
and :func:`python_backward` in the same order, with this module's functions and gelu's host kernels), else in Python;
tests/test_compat_host_mlp.py runs both.

Taken when the call computes exactly that (:func:`plan`): megatron-core's own ``MLP.forward`` (MindSpeed's
replacements are kept) called with the hidden states alone (``per_token_scale`` None); no bias-activation fusion
(megatron's fused bias-gelu is the tanh approximation) and no gated linear unit; ``activation_func`` the erf gelu
our patch installed (:func:`.gelu.is_erf_gelu`) with its host kernels usable; ``linear_fc1`` and ``linear_fc2``
exactly megatron's ``ColumnParallelLinear`` and ``RowParallelLinear`` with their own ``forward``, at
tensor-parallel size 1, without sequence parallelism, expert communication, dgrad all-reduce, gradient
accumulation fusion, deferred embedding gradients, gathered output or CPU offloading, ``linear_fc2`` with a
parallel input and its bias returned (or none), both weights requiring a gradient, and megatron's linear function
being :mod:`.host_linear`'s wrapper (what those layers would call) for the plain tensors it takes
(:func:`.host_linear.plain_operands`); no forward hooks on either linear layer (nor global ones) and no parity
capture recording every module's output (:func:`.module_recording.expects_module_calls`). Everything else runs
megatron's forward.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat import gelu, host_extensions, host_linear, host_swiglu
from mindspeed_ms.compat.errors import TorchRefusalError
from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_arithmetic import bias_add, column_sum
from mindspeed_ms.compat.host_kernels import matmul
from mindspeed_ms.compat.host_memory import host_array
from mindspeed_ms.compat.host_outputs import new_float32
from mindspeed_ms.compat.module_recording import expects_module_calls

#: the C bodies' extension (``_host_bodies``, of its ABI), or None where not built
_compiled = host_extensions.bodies_module()

__all__ = ["MODULE", "bodies", "forward_wrapper", "has_compiled_bodies", "plan", "python_backward", "python_forward"]

#: the module whose ``MLP.forward`` this computes
MODULE = "megatron.core.transformer.mlp"
_LAYERS = "megatron.core.tensor_parallel.layers"
#: _host_gelu refused our own float32 buffers (plan() asked it once, one element): a bug of ours, never a silent result
_KERNEL_REFUSED = "mindspeed_ms.compat._host_gelu refused the MLP's float32 buffers; report this with the shapes used"
_MODIFIED = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
             "the input or a weight of megatron's MLP was written after its forward")


@functools.lru_cache(maxsize=1)
def _megatron() -> tuple[Any, Any, Any, Any]:
    """(ColumnParallelLinear, RowParallelLinear, the layers module, get_tensor_model_parallel_world_size)."""
    import megatron.core.parallel_state as parallel_state
    import megatron.core.tensor_parallel.layers as layers

    return (layers.ColumnParallelLinear, layers.RowParallelLinear, layers,
            parallel_state.get_tensor_model_parallel_world_size)


def _megatrons_own(function: Any) -> bool:
    return getattr(function, "__module__", None) == _LAYERS and not hasattr(function, "__wrapped__")


def _linears_plain(fc1: Any, fc2: Any) -> bool:
    """Whether megatron's two linear layers compute ``input @ weight.t()`` (fc1 with its bias where not skipped) and
    nothing else at this call: their own classes and forwards, every option off, tensor-parallel size 1."""
    column, row, layers, world_size = _megatron()
    if type(fc1) is not column or type(fc2) is not row or not _megatrons_own(column.forward) or not _megatrons_own(
            row.forward) or world_size() != 1 or not host_linear.is_linear_wrapper(
            layers.linear_with_grad_accumulation_and_async_allreduce):
        return False
    config = fc1.config
    if (fc2.config is not config or getattr(config, "_cpu_offloading_context", None) is not None
            or config.defer_embedding_wgrad_compute):
        return False
    for layer in (fc1, fc2):
        weight = layer.weight
        if (weight is None or not weight.requires_grad or layer.gradient_accumulation_fusion or layer.sequence_parallel
                or layer.explicit_expert_comm):
            return False
    return (not fc1.allreduce_dgrad and not fc1.gather_output and fc2.input_is_parallel
            and (fc2.skip_bias_add or fc2.bias is None))


def plan(mlp: Any, hidden: Any) -> tuple[Any, Any, Any] | None:
    """fc1's weight, the bias added to its output (None: none) and fc2's weight when :func:`forward_wrapper` takes
    this call of ``mlp``'s forward with ``hidden`` (see the module's docstring), else None."""
    config = mlp.config
    if config.bias_activation_fusion or config.gated_linear_unit or not gelu.is_erf_gelu(mlp.activation_func):
        return None
    fc1, fc2 = mlp.linear_fc1, mlp.linear_fc2
    if not _linears_plain(fc1, fc2) or gelu.host_gelu() is None or expects_module_calls(fc1, fc2):
        return None
    weight, bias, second = fc1.weight, fc1.bias, fc2.weight
    if not host_linear.plain_operands(hidden, weight, bias) or not host_linear.plain_weight(second, weight._shape[0]):
        return None
    return weight, bias, second


#: the intermediates' arrays of finished backwards, by count and shape, for the next forward or backward: the
#: block's forward keeps three activation-sized float32 arrays until its backward, which needs two more for a moment;
#: a fresh NumPy allocation (and its split into arrays) every step cost more than the kernels at the tiny size
_SPARE: dict[tuple[int, tuple[int, ...]], list[tuple[Any, ...]]] = {}
#: at most this many spare sets in all (a step's layers; more only while shapes change)
_MOST_SPARE = 16


def _take(count: int, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """``count`` float32 arrays of ``shape`` (values undefined) in one allocation: a spare set (:func:`_give`) or
    new ones."""
    spare = _SPARE.get((count, shape))
    if spare:
        return spare.pop()
    import numpy as np

    return tuple(np.empty((count, *shape), np.float32))


def _give(arrays: tuple[Any, ...]) -> None:
    """Keep ``arrays`` (from :func:`_take`; nothing else refers to them any more) for the next :func:`_take`."""
    if sum(map(len, _SPARE.values())) >= _MOST_SPARE:
        _SPARE.clear()
    _SPARE.setdefault((len(arrays), arrays[0].shape), []).append(arrays)


def _refuse() -> None:
    raise TorchRefusalError("MLP.backward", _MODIFIED)


def _kernel_refused() -> None:
    raise RuntimeError(_KERNEL_REFUSED)


def python_forward(ctx: Any, input: Any, fc1: Any, bias: Any, fc2: Any) -> Any:
    """:class:`HostMLP`'s forward: ``gelu(input @ fc1.t() + bias) @ fc2.t()`` into a new float32 tensor; the inputs,
    their versions and the intermediates kept in ``ctx.kept``."""
    forward_kernel = gelu.host_gelu()[0]  # type: ignore[index]  # plan() checked it
    values, first, second = host_array(input), host_array(fc1, sync=False), host_array(fc2, sync=False)
    shape = (*values.shape[:-1], first.shape[0])
    block = _take(3, shape)
    hidden, activation, one_plus_erf = block
    matmul(values, first.T, hidden)
    if bias is not None:
        bias_add(hidden, host_array(bias, sync=False), hidden)
    if forward_kernel(hidden, activation, one_plus_erf, True) is NotImplemented:
        _kernel_refused()
    result, out = new_float32((*values.shape[:-1], second.shape[0]))
    matmul(activation, second.T, out)
    ctx.kept = (input, fc1, fc2, input._version, fc1._version, fc2._version, block, bias is not None)
    return result


def python_backward(ctx: Any, grad: Any) -> Any:
    """:class:`HostMLP`'s backward: the gradients of input, fc1, bias and fc2, None where not needed."""
    input, fc1, fc2, input_version, fc1_version, fc2_version, block, has_bias = ctx.kept
    del ctx.kept
    hidden, activation, one_plus_erf = block
    if input._version != input_version or fc1._version != fc1_version or fc2._version != fc2_version:
        _refuse()
    needs = ctx.needs_input_grad
    gradient = host_array(grad)
    rows = gradient.reshape(-1, gradient.shape[-1])  # a copy where not contiguous, as .contiguous()
    grad_input = grad_fc1 = grad_bias = grad_fc2 = None
    if needs[3]:  # fc2's weight: grad_output.t() @ gelu's output
        grad_fc2, out = new_float32(tuple(fc2._shape))
        matmul(rows.T, activation.reshape(-1, activation.shape[-1]), out)
    if needs[0] or needs[1] or (has_bias and needs[2]):
        backward_kernel = gelu.host_gelu()[1]  # type: ignore[index]  # plan() checked it
        second = host_array(fc2, sync=False)
        scratch = _take(2, hidden.shape)
        grad_activation, grad_hidden = scratch
        matmul(gradient, second, grad_activation)  # fc2's input gradient
        if backward_kernel(grad_activation, hidden, one_plus_erf, grad_hidden) is NotImplemented:
            _kernel_refused()
        hidden_rows = grad_hidden.reshape(-1, grad_hidden.shape[-1])
        if has_bias and needs[2]:
            grad_bias, out = new_float32((hidden_rows.shape[1],))
            column_sum(hidden_rows, out)
        first = host_array(fc1, sync=False)
        if needs[1]:
            values = host_array(input, sync=False)
            grad_fc1, out = new_float32(first.shape)
            matmul(hidden_rows.T, values.reshape(-1, values.shape[-1]), out)
        if needs[0]:
            grad_input, out = new_float32(tuple(input._shape))
            matmul(grad_hidden, first, out)
        _give(scratch)
    _give(block)
    return grad_input, grad_fc1, grad_bias, grad_fc2


def bodies(compiled: bool = True) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """:class:`HostMLP`'s forward and backward: the C ones (``_host_bodies.MLP`` over this module's functions and
    gelu's host kernels: the same calls in the same order) where built, gelu's kernels are, and ``compiled``; else
    :func:`python_forward` and :func:`python_backward`."""
    kernels = gelu.host_gelu()
    if compiled and _compiled is not None and kernels is not None:
        made = _compiled.MLP(host_array, new_float32, matmul, bias_add, column_sum, _refuse, _take, _give, *kernels,
                             _kernel_refused)
        return made.forward, made.backward
    return python_forward, python_backward


def has_compiled_bodies() -> bool:
    """Whether :class:`HostMLP` runs the C bodies (``_host_bodies`` built, of its ABI, and gelu's host kernels)."""
    return _compiled is not None and gelu.host_gelu() is not None


@functools.lru_cache(maxsize=2)
def _function(compiled: bool = True) -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable) with :func:`bodies`."""
    forward, backward = bodies(compiled)

    class HostMLP(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``gelu(input @ fc1.t() + bias) @ fc2.t()`` and the gradients of input, fc1, bias and fc2."""

    HostMLP.forward, HostMLP.backward = staticmethod(forward), staticmethod(backward)
    return HostMLP


def forward_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``MLP.forward(self, hidden_states, per_token_scale=None)``: megatron's own forward only (anything else is
    returned as is); the plain case (:func:`plan`) as one Function, SwiGLU's glu as one
    (:func:`.host_swiglu.gated_forward`), every other call to ``op``."""
    if getattr(op, "__module__", None) != MODULE or hasattr(op, "__wrapped__"):
        return op

    @functools.wraps(op)
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs or not args or len(args) > 2 or (len(args) == 2 and args[1] is not None):
            return op(self, *args, **kwargs)
        taken = plan(self, args[0])
        if taken is None:
            if host_swiglu.gated_plan(self):  # SwiGLU: megatron's modules, the glu as one Function
                return host_swiglu.gated_forward(self, args[0])
            return op(self, *args, **kwargs)
        fc1, bias, fc2 = taken
        output = _function().apply(args[0], fc1, bias, fc2)
        return output, self.linear_fc2.bias if self.linear_fc2.skip_bias_add else None

    return forward
