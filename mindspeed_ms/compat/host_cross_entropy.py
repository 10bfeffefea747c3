"""The vocab-parallel cross entropy's input gradient of float32 logits on the host (MindSpore's CPU backend).

Megatron's ``_VocabParallelCrossEntropy.backward`` turns the saved softmax into the logits' gradient:
``grad_2d[arange, target] -= softmax_update`` and ``grad_input *= grad_output.unsqueeze(-1)``
(``VocabParallelCrossEntropy.calculate_gradients``; :func:`mindspeed_ms.compat.megatron_core.calculate_gradients`
computes it out of place, as a ``one_hot``, a cast and three broadcasting kernels: ~2-3 ms each for the mid
size's ``[512, 128]`` logits on CPU). Here NumPy does PyTorch's two steps over the tensors' host memory, straight
into a new tensor of MindSpore's memory: the same float32 subtraction at each token's target and the same
multiplication, so the same bits as PyTorch's.

Taken: float32 softmax of at least :data:`MIN_ELEMENTS` elements (any size: the tiny model's ``[128, 128]`` too,
where the five kernels cost ~2-8 ms a call and NumPy ~0.1 ms), an integer target and a float32 update of one
entry per row, a float32 ``grad_output`` of one entry per row. Everything else goes to the wrapped function.

The forward's three steps likewise (:func:`logits_max_wrapper`, :func:`predicted_logits_wrapper`,
:func:`cross_entropy_loss_wrapper`): megatron's ``calculate_logits_max`` (a row maximum: exact), the rest of
``calculate_predicted_logits`` (the maximum subtracted in place, each token's target logit picked, the exponentials
written in place and summed) and ``calculate_cross_entropy_loss`` (``log(sum) - picked``, the exponentials divided
by their sums in place) as PyTorch's float32 operations in NumPy over the tensors' host memory. At the field's
vocabulary of 4096 (``[32, 2, 4096]`` logits) the three took ~4.5 ms a micro-batch as MindSpore's CPU kernels and
take ~0.35 ms here. The subtraction, the pick, the division and the maximum are PyTorch's bits; NumPy's float32
``exp`` and ``log`` are within 2 ulps of PyTorch's (MindSpore's CPU ``Exp`` was up to 103 ulps away, ``Log`` 5) and
the row sums within float32 rounding of PyTorch's (another summation order). The in-place writes are counted in the
tensor's version counter, as PyTorch's are. Taken for a float32, contiguous logits tensor that owns its memory
(megatron's output layer's result), float32 maxima and sums and an integer target of one entry per row, every target
inside the row; everything else (bfloat16 logits, a view) goes to the wrapped function. Only megatron's own steps
(and our replacement of ``calculate_predicted_logits``) are taken over: a field replacement (MindSpeed's,
MindSpeed-LLM's) keeps its code (:data:`FORWARD_OWNERS`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.host_arithmetic import (
    cross_entropy_forward,
    cross_entropy_gradient,
    cross_entropy_loss,
    row_maxima,
)

__all__ = ["FORWARD_OWNERS", "MIN_ELEMENTS", "calculate_gradients_wrapper", "cross_entropy_loss_wrapper",
           "logits_max_wrapper", "predicted_logits_wrapper"]

#: the host path from the first element: its arithmetic is the kernels' (bit for bit), and at every size it is
#: cheaper than MindSpore's five kernels (OneHot, Cast, Mul, Sub, Mul: ~250 us each in PyNative at the tiny size)
MIN_ELEMENTS = 1


@functools.lru_cache(maxsize=1)
def _kinds() -> tuple[Any, frozenset[Any]]:
    import mindspore

    return mindspore.float32, frozenset((mindspore.int32, mindspore.int64))


def _taken(grad_2d: Any, masked_target_1d: Any, softmax_update: Any, grad_input: Any, grad_output: Any) -> bool:
    shape = getattr(grad_2d, "_shape", None)
    float32, integers = _kinds()
    if shape is None or len(shape) != 2 or grad_2d.dtype is not float32 or math.prod(shape) < MIN_ELEMENTS:
        return False
    rows = shape[0]
    for tensor, kinds in ((masked_target_1d, integers), (softmax_update, (float32,)), (grad_output, (float32,))):
        if getattr(tensor, "_shape", None) is None or tensor.dtype not in kinds or math.prod(tensor._shape) != rows:
            return False
    input_shape = getattr(grad_input, "_shape", None)
    return input_shape is not None and math.prod(input_shape) == math.prod(shape) and input_shape[-1] == shape[1]


def calculate_gradients_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``VocabParallelCrossEntropy.calculate_gradients(grad_2d, arange_1d, masked_target_1d, softmax_update,
    grad_input, grad_output)``: float32 logits on the host."""

    @functools.wraps(op)
    def calculate_gradients(grad_2d: Any, arange_1d: Any, masked_target_1d: Any, softmax_update: Any,
                            grad_input: Any, grad_output: Any) -> Any:
        if not _taken(grad_2d, masked_target_1d, softmax_update, grad_input, grad_output):
            return op(grad_2d, arange_1d, masked_target_1d, softmax_update, grad_input, grad_output)
        from mindspeed_ms.compat.host_memory import host_array
        from mindspeed_ms.compat.host_outputs import new_float32

        rows = grad_2d._shape[0]
        result, out = new_float32(tuple(grad_input._shape))
        cross_entropy_gradient(host_array(grad_2d), host_array(masked_target_1d, sync=False).reshape(rows),
                               host_array(softmax_update, sync=False).reshape(rows),
                               host_array(grad_output, sync=False).reshape(rows), out.reshape(grad_2d._shape))
        return result

    return calculate_gradients


#: whose ``VocabParallelCrossEntropy`` forward steps the forward wrappers take over: megatron's own, and
#: :mod:`.megatron_core`'s ``calculate_predicted_logits`` (megatron's results in fewer kernels). A replacement of the
#: field's (MindSpeed's, MindSpeed-LLM's: its MindSpore ``calculate_predicted_logits`` returns a float mask, which its
#: ``prepare_gradient_calculation_operands`` expects) keeps its own code.
FORWARD_OWNERS = ("megatron.core.tensor_parallel.cross_entropy", "mindspeed_ms.compat.megatron_core")


def _takes_over(op: Any) -> bool:
    """Whether a forward wrapper computes ``op``'s results (see :data:`FORWARD_OWNERS`), else leaves ``op`` as is."""
    return getattr(op, "__module__", None) in FORWARD_OWNERS and not hasattr(op, "__wrapped__")


def _rows_of(tensor: Any, shape: tuple[int, ...]) -> bool:
    """Whether ``tensor`` is a contiguous float32 tensor of ``shape`` (one value per row of the logits)."""
    from mindspeed_ms.compat.host_memory import contiguity_read

    float32, _ = _kinds()
    return (getattr(tensor, "_shape", None) is not None and tuple(tensor._shape) == shape
            and tensor.dtype is float32 and contiguity_read()(tensor))


def _logits_shape(logits: Any) -> tuple[int, ...] | None:
    """``logits``'s shape where it has at least two dimensions and elements, else None."""
    shape = getattr(logits, "_shape", None)
    if shape is None or len(shape) < 2 or math.prod(shape) == 0:
        return None
    return tuple(shape)


def logits_max_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``VocabParallelCrossEntropy.calculate_logits_max(vocab_parallel_logits)``: the row maxima of float32
    logits (``.float()`` is the tensor itself) on the host."""
    if not _takes_over(op):
        return op

    @functools.wraps(op)
    def calculate_logits_max(vocab_parallel_logits: Any) -> Any:
        from mindspeed_ms.compat.host_memory import contiguity_read, host_array, host_memory_reason
        from mindspeed_ms.compat.host_outputs import new_float32

        shape = _logits_shape(vocab_parallel_logits)
        float32, _ = _kinds()
        if (shape is None or vocab_parallel_logits.dtype is not float32 or host_memory_reason() is not None
                or not contiguity_read()(vocab_parallel_logits)):
            return op(vocab_parallel_logits)
        maxima, out = new_float32(shape[:-1])
        row_maxima(host_array(vocab_parallel_logits).reshape(-1, shape[-1]), out.reshape(-1))
        return vocab_parallel_logits, maxima

    return calculate_logits_max


def predicted_logits_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``VocabParallelCrossEntropy.calculate_predicted_logits(vocab_parallel_logits, target, logits_max,
    vocab_start_index, vocab_end_index)``: float32 logits on the host, written in place as megatron writes them."""
    if not _takes_over(op):
        return op

    @functools.wraps(op)
    def calculate_predicted_logits(vocab_parallel_logits: Any, target: Any, logits_max: Any, vocab_start_index: int,
                                   vocab_end_index: int) -> Any:
        result = _predicted_on_host(vocab_parallel_logits, target, logits_max, vocab_start_index, vocab_end_index)
        if result is None:
            return op(vocab_parallel_logits, target, logits_max, vocab_start_index, vocab_end_index)
        return result

    return calculate_predicted_logits


def _predicted_on_host(logits: Any, target: Any, logits_max: Any, start: Any, end: Any) -> tuple[Any, ...] | None:
    from mindspeed_ms.compat.host_indices import target_operands
    from mindspeed_ms.compat.host_memory import host_array
    from mindspeed_ms.compat.host_outputs import new_float32
    from mindspeed_ms.compat.inplace import call_site, owned_float32_on_host
    from mindspeed_ms.compat.slice_copies import refuse_write
    from mindspeed_ms.compat.version_counter import bump_version

    shape = _logits_shape(logits)
    _, integers = _kinds()
    if (shape is None or type(start) is not int or type(end) is not int or not owned_float32_on_host(logits)
            or not _rows_of(logits_max, shape[:-1]) or getattr(target, "dtype", None) not in integers
            or tuple(getattr(target, "_shape", ())) != shape[:-1]):
        return None
    operands = target_operands(target, start, end)
    if operands is None:
        return None
    target_mask, masked_target = operands
    rows, vocab = math.prod(shape[:-1]), shape[-1]
    index = host_array(masked_target, sync=False).reshape(rows)
    if int(index.min()) < 0 or int(index.max()) >= vocab:  # a partition wider than the logits: megatron's error
        return None
    refuse_write("calculate_predicted_logits", logits, call_site)
    predicted, picked = new_float32(shape[:-1])
    sums, sums_out = new_float32(shape[:-1])
    cross_entropy_forward(host_array(logits, sync=False).reshape(rows, vocab),
                          host_array(logits_max, sync=False).reshape(rows), index,
                          host_array(target_mask, sync=False).reshape(rows), picked.reshape(rows),
                          sums_out.reshape(rows))
    bump_version(logits)
    return target_mask, masked_target.view(-1), predicted, sums, logits


def cross_entropy_loss_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``VocabParallelCrossEntropy.calculate_cross_entropy_loss(exp_logits, predicted_logits, sum_exp_logits)``:
    float32 exponentials on the host, divided in place as megatron divides them."""
    if not _takes_over(op):
        return op

    @functools.wraps(op)
    def calculate_cross_entropy_loss(exp_logits: Any, predicted_logits: Any, sum_exp_logits: Any) -> Any:
        from mindspeed_ms.compat.host_memory import host_array
        from mindspeed_ms.compat.host_outputs import new_float32
        from mindspeed_ms.compat.inplace import call_site, owned_float32_on_host
        from mindspeed_ms.compat.slice_copies import refuse_write
        from mindspeed_ms.compat.version_counter import bump_version

        shape = _logits_shape(exp_logits)
        if (shape is None or not owned_float32_on_host(exp_logits) or not _rows_of(predicted_logits, shape[:-1])
                or not _rows_of(sum_exp_logits, shape[:-1])):
            return op(exp_logits, predicted_logits, sum_exp_logits)
        refuse_write("calculate_cross_entropy_loss", exp_logits, call_site)
        rows = math.prod(shape[:-1])
        loss, out = new_float32(shape[:-1])
        cross_entropy_loss(host_array(exp_logits).reshape(rows, shape[-1]),
                           host_array(sum_exp_logits, sync=False).reshape(rows),
                           host_array(predicted_logits, sync=False).reshape(rows), out.reshape(rows))
        bump_version(exp_logits)
        return exp_logits, loss

    return calculate_cross_entropy_loss
