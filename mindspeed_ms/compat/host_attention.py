"""Megatron's core attention (``DotProductAttention.forward``) as one autograd Function on the host (MindSpore's CPU).

megatron-core's ``DotProductAttention`` (the local spec's core attention, no flash attention) reshapes query, key
and value, takes ``baddbmm(q, k^T, beta=0, alpha=softmax_scale)``, masks the scores with
``FusedScaleMaskSoftmax`` (``masked_fill_(mask, -10000.0)`` and ``torch.nn.Softmax(dim=-1)`` for float32
inputs), applies attention dropout, multiplies by v with ``bmm`` and permutes the context back to ``[sq, b, hp]``.
On MindSpore's CPU backend that is ~10 kernels and ~15 view ops forward and ~25 kernels backward per layer: at
the tiny size (hidden 64) each costs PyNative's ~250 us, at the mid size (hidden 512, seq 128) the BatchMatMul
kernels alone take ~12 ms a step (PyTorch's bmm ~5 ms) and q, k, v are copied again for the transposed operands.

Here the whole block is one Function: NumPy's batched matmul (OpenBLAS, on one thread) over the tensors' host
memory, PyTorch's softmax arithmetic (:func:`~mindspeed_ms.compat.host_arithmetic.softmax_forward`), the context
written straight into a new tensor of MindSpore's memory (:mod:`.host_outputs`) in megatron's ``[sq, b, hp]``
layout; the backward is PyTorch's (bmm, softmax, masked_fill and baddbmm gradients, in their order), the gradients
of q, k and v written into new tensors of their shapes. The backward keeps its own copies of q, k, v and the
probabilities (never arrays over a view's memory).

Where q, k and v are the three pieces of megatron's QKV split as :mod:`.host_split` returned them, unchanged
(``get_query_key_value_tensors`` with as many query groups as heads, no rotary embedding, no q/k layer norm),
the Function's input is the split's input instead: it reads the pieces in place (tensors of their own memory,
kept for the backward with their version counters checked there: a write in place in between raises PyTorch's
error) and its backward writes the three gradients into one tensor of the QKV shape, so neither the copies nor
the split's backward (its scatter) run. The same bits. Where query and key are megatron's rotary embeddings of the
pieces as :mod:`.host_rope` computed them (the field's ``rope`` configs), the Function reads those and applies the
rotary embedding's backward itself, into the QKV gradient. Results agree with PyTorch's to float32 rounding
(tests/test_compat_host_attention.py runs megatron's own ``DotProductAttention`` in the reference interpreter).

The Functions' bodies run in one C call each where ``_host_bodies`` is built (its ``Attention``: the calls of
:func:`python_forward`, :func:`python_backward`, :func:`python_qkv_forward` and :func:`python_qkv_backward` in the same
order, with this module's functions), else in Python; tests/test_compat_host_attention.py runs both.

Taken when the call computes exactly that: float32 query/key/value of ``[s, b, np, hn]`` with as many key/value
heads as query heads (no grouped-query repetition), no attention bias, no packed sequences, attention dropout off
(``p == 0`` or the dropout module in eval mode), ``FusedScaleMaskSoftmax`` with megatron's own methods and mask
function, no extra softmax scale (``apply_query_key_layer_scaling``) and float32 (not fp16/bf16) inputs, a mask
that is None (causal: megatron's default upper-triangular mask) or a bool tensor that broadcasts to
``[b, np, sq, sk]``; the wrapped forward must be megatron-core's own (MindSpeed's replacements are kept).
No forward hooks on the softmax and dropout modules (nor global ones), and no parity capture recording every
module's output (the model's first forward under ``mindspeed-ms parity``): those expect the modules to be called.
Everything else (dropout in training included: its random stream is the wrapped forward's) runs the wrapped
forward.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat import blas_threads, host_extensions
from mindspeed_ms.compat.attention_halves import MIN_THREAD_PRODUCT, backward_in_halves, forward_in_halves
from mindspeed_ms.compat.errors import TorchRefusalError
from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_memory import host_array
from mindspeed_ms.compat.host_outputs import new_float32
from mindspeed_ms.compat.host_rope import rope_backward, rope_of
from mindspeed_ms.compat.host_split import piece_of
from mindspeed_ms.compat.module_recording import expects_module_calls

# The per-call checks below read their few tensors through C-level maps and explicit tests, without comprehensions
# or generator expressions (each a Python frame, resumed per item: ~60 of them a training step before)
#: a tensor's version counter
_VERSION = operator.attrgetter("_version")

__all__ = ["MIN_THREAD_PRODUCT", "MODULE", "bodies", "forward_wrapper", "has_compiled_bodies", "mask_broadcasts_to",
           "python_backward", "python_forward", "python_qkv_backward", "python_qkv_forward"]

#: the C bodies' extension (``_host_bodies``, of its ABI), or None where not built
_compiled = host_extensions.bodies_module()

#: the module whose ``DotProductAttention.forward`` this computes
MODULE = "megatron.core.transformer.dot_product_attention"
_SOFTMAX_MODULE = "megatron.core.fusions.fused_softmax"
_UTILS_MODULE = "megatron.core.transformer.utils"
#: the class of :func:`mindspeed_ms.engine.journal.counting_shim`'s call counters (a transparent proxy)
_COUNTING_SHIM = "counting_shim.<locals>.CountingShim"
#: PyTorch's message when a tensor its backward needs was written in place after the forward
_MODIFIED = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
             "the query, key or value of megatron's DotProductAttention (a piece of the QKV split) was written "
             "after the attention's forward")
_NAMES = ("query", "key", "value", "attention_mask", "attn_mask_type", "attention_bias", "packed_seq_params")
#: the parameters after the four tensors
_LATER = frozenset(_NAMES[4:])


def _refuse() -> None:
    raise TorchRefusalError("DotProductAttention.backward", _MODIFIED)


def _empty(shape: tuple[int, ...]) -> Any:
    """A new float32 NumPy array of ``shape`` (values undefined)."""
    import numpy as np

    return np.empty(shape, np.float32)


def _attend(ctx: Any, query: Any, key: Any, value: Any, plan: _Plan) -> Any:
    """The context of ``query``, ``key``, ``value`` into a new tensor; what the backward needs in ``ctx.saved``."""
    _one_blas_thread()
    sq, b, heads, size = query._shape
    result, memory = new_float32((sq, b, heads * size))
    mask = plan.mask
    if plan.tensor is not None:  # the mask tensor's memory, copied for the backward
        mask = host_array(plan.tensor).copy()
    inputs = (host_array(query), host_array(key, sync=False), host_array(value, sync=False))
    if plan.pieces is None:  # the backward's own copies (never arrays over a view's memory)
        inputs = (inputs[0].copy(), inputs[1].copy(), inputs[2].copy())
        kept: tuple[Any, ...] = inputs
    else:  # the split's pieces: tensors of their own memory, kept alive (their versions checked)
        kept = plan.pieces
    probs = forward_in_halves(*inputs, mask, plan.alpha, memory.reshape(sq, b, heads, size))
    ctx.saved = (kept, plan.versions, probs, mask, plan.alpha)
    return result


def _gradients(ctx: Any, grad: Any, grad_query: Any, grad_key: Any, grad_value: Any) -> None:
    """The gradients of query, key and value into the three arrays."""
    kept, versions, probs, mask, alpha = ctx.saved
    del ctx.saved
    if versions is not None:
        if tuple(map(_VERSION, kept)) != versions:  # the three pieces, each with its version
            _refuse()
        kept = (host_array(kept[0], sync=False), host_array(kept[1], sync=False), host_array(kept[2], sync=False))
    _one_blas_thread()
    backward_in_halves(host_array(grad).reshape(grad_query.shape), kept, probs, mask, alpha, grad_query, grad_key,
                       grad_value)


def python_forward(ctx: Any, query: Any, key: Any, value: Any, plan: _Plan) -> Any:
    """HostAttention's forward: the context ``[sq, b, np * hn]`` of query ``[sq, b, np, hn]``, key and value."""
    ctx.shapes = (tuple(query._shape), tuple(key._shape))
    return _attend(ctx, query, key, value, plan)


def python_backward(ctx: Any, grad: Any) -> Any:
    """HostAttention's backward: the gradients of query, key and value."""
    query_shape, key_shape = ctx.shapes
    grad_query, dq = new_float32(query_shape)
    grad_key, dk = new_float32(key_shape)
    grad_value, dv = new_float32(key_shape)
    _gradients(ctx, grad, dq, dk, dv)
    return grad_query, grad_key, grad_value, None


def python_qkv_forward(ctx: Any, qkv: Any, plan: _Plan) -> Any:
    """HostAttentionQKV's forward: the same context from the QKV projection's pieces (:attr:`_Plan.pieces`)."""
    ctx.shape, ctx.rope = tuple(qkv._shape), plan.rope
    query, key, value = plan.pieces
    return _attend(ctx, query, key, value, plan)


def python_qkv_backward(ctx: Any, grad: Any) -> Any:
    """HostAttentionQKV's backward: the three gradients written into one tensor of the QKV shape (the rotary
    embedding's backward for q and k where they went through it)."""
    shape, rope = ctx.shape, ctx.rope
    size = shape[3] // 3
    grad_qkv, memory = new_float32(shape)
    parts = memory[..., :size], memory[..., size:2 * size], memory[..., 2 * size:]
    if rope is None:
        _gradients(ctx, grad, *parts)
        return grad_qkv, None
    # q and k went through megatron's rotary embedding (.host_rope): its backward into the QKV gradient
    rotated = _empty(parts[0].shape), _empty(parts[1].shape)
    _gradients(ctx, grad, *rotated, parts[2])
    for given, each, out in zip(rotated, rope, parts):
        rope_backward(given, each, out)
    return grad_qkv, None


def bodies(compiled: bool = True) -> tuple[Callable[..., Any], ...]:
    """HostAttention's and HostAttentionQKV's forward and backward: the C ones (``_host_bodies.Attention`` over this
    module's functions: the same calls in the same order) where built and ``compiled``, else the Python bodies."""
    if compiled and _compiled is not None:
        made = _compiled.Attention(host_array, new_float32, forward_in_halves, backward_in_halves, _one_blas_thread,
                                   _refuse, rope_backward, _empty)
        return made.forward, made.backward, made.qkv_forward, made.qkv_backward
    return python_forward, python_backward, python_qkv_forward, python_qkv_backward


def has_compiled_bodies() -> bool:
    """Whether the attention Functions run the C bodies (``_host_bodies`` built, of its ABI)."""
    return _compiled is not None


@functools.lru_cache(maxsize=2)
def _functions(compiled: bool = True) -> tuple[Any, Any]:
    """The autograd Functions (built on first use: MSAdapter's ``torch`` must be importable): of q, k and v, and of
    the split's input when q, k and v are its pieces; with :func:`bodies`."""
    forward, backward, qkv_forward, qkv_backward = bodies(compiled)

    class HostAttention(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """Context ``[sq, b, np * hn]`` of query ``[sq, b, np, hn]``, key and value ``[sk, b, np, hn]``."""

    class HostAttentionQKV(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """The same context from megatron's fused QKV projection ``[sq, b, np, 3 * hn]`` (q, k, v its pieces along
        the last dimension, in :attr:`_Plan.pieces`); the backward writes their gradients into one tensor."""

    HostAttention.forward, HostAttention.backward = staticmethod(forward), staticmethod(backward)
    HostAttentionQKV.forward, HostAttentionQKV.backward = staticmethod(qkv_forward), staticmethod(qkv_backward)
    return HostAttention, HostAttentionQKV


def _one_blas_thread() -> None:
    """Run the batched products on one OpenBLAS thread (:mod:`.blas_threads`: each product of a head is small, 1M
    multiply-adds at the mid size, where a second thread waits for a core on a loaded machine; the same bits)."""
    threads = blas_threads.openblas_threads()
    if threads is not None:
        threads.use(1)


class _Plan:
    """What the Function needs besides q, k, v (one Python object: not a tensor input of the autograd node)."""

    __slots__ = ("alpha", "mask", "pieces", "rope", "tensor", "versions")

    def __init__(self, mask: Any, tensor: Any, alpha: float) -> None:
        self.mask = mask  # a bool array (megatron's default causal mask) or None
        self.tensor = tensor  # the mask tensor given, or None
        self.alpha = alpha
        self.pieces: Any = None  # None, or q, k, v: the split's pieces (the fused Function)
        self.versions: tuple[int, ...] | None = None  # their version counters at the forward
        self.rope: Any = None  # None, or the host_rope.Rope of q and of k: q, k are their rotary embeddings


@functools.lru_cache(maxsize=1)
def _megatron() -> tuple[Any, Any, Any, Any]:
    """(float32, bool, FusedScaleMaskSoftmax, AttnMaskType.causal)."""
    import mindspore
    from megatron.core.fusions.fused_softmax import FusedScaleMaskSoftmax
    from megatron.core.transformer.enums import AttnMaskType

    return mindspore.float32, mindspore.bool_, FusedScaleMaskSoftmax, AttnMaskType.causal


def _masks_scores(function: Any) -> bool:
    """Whether ``function`` is megatron's ``attention_mask_func`` (``masked_fill_(mask, -10000.0)``) or our
    out-of-place one (:func:`mindspeed_ms.compat.megatron_core.attention_mask_func`, the same values)."""
    import mindspeed_ms.compat.megatron_core as megatron_core

    while type(function).__qualname__ == _COUNTING_SHIM:  # MINDSPEED_MS_TRACE counts the calls of a replacement
        function = function.__wrapped__
    return function is megatron_core.attention_mask_func or (
        _megatrons_own(function, _UTILS_MODULE) and getattr(function, "__name__", None) == "attention_mask_func")


@functools.lru_cache(maxsize=8)
def _causal(length: int) -> Any:
    """megatron's default causal mask (``get_default_causal_mask``: True above the diagonal), read-only."""
    import numpy as np

    mask = np.triu(np.ones((length, length), dtype=bool), 1)
    mask.flags.writeable = False
    return mask


def _megatrons_own(function: Any, module: str) -> bool:
    """Whether ``function`` is megatron-core's own code from ``module`` (not a replacement or a wrapper of it)."""
    return getattr(function, "__module__", None) == module and not hasattr(function, "__wrapped__")


def _softmax_is_plain(softmax: Any) -> bool:
    """Whether ``softmax`` is megatron's FusedScaleMaskSoftmax taking its torch path over float32 scores as is."""
    fused = _megatron()[2]
    kind = type(softmax)
    return (kind is fused and _masks_scores(softmax.mask_func) and softmax.scale is None
            and not softmax.input_in_float16
            and _megatrons_own(kind.forward, _SOFTMAX_MODULE)
            and _megatrons_own(kind.forward_torch_softmax, _SOFTMAX_MODULE)
            and _megatrons_own(kind.is_kernel_available, _SOFTMAX_MODULE))


def _mask_plan(softmax: Any, mask: Any, scores: tuple[int, int, int, int], alpha: float) -> _Plan | None:
    """The plan for the scores ``[b, np, sq, sk]`` and this mask (``softmax``: the module's scale_mask_softmax), or
    None when not taken."""
    _, boolean, _, causal = _megatron()
    sq, sk = scores[2:]
    if mask is None:
        if softmax.attn_mask_type == causal and sq > 1:
            # sq != sk: megatron's assertion and its message
            return _Plan(_causal(sq), None, alpha) if sq == sk else None
        return _Plan(None, None, alpha)
    shape = getattr(mask, "_shape", None)
    if shape is None or getattr(mask, "_dtype", None) is not boolean or not mask_broadcasts_to(tuple(shape), scores):
        return None
    return _Plan(None, mask, alpha)


def mask_broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``target`` itself (``numpy.broadcast_shapes(shape, target) == target``): no
    more dimensions, each of them, aligned from the right, 1 or ``target``'s."""
    if len(shape) > len(target):
        return False
    for size, wanted in zip(reversed(shape), reversed(target)):  # a loop: no generator frame resumed per dimension
        if size != 1 and size != wanted:
            return False
    return True


def _plan(module: Any, query: Any, key: Any, value: Any, mask: Any, bias: Any, packed: Any) -> _Plan | None:
    """The Function's plan when this call is taken, else None."""
    float32 = _megatron()[0]
    found = (getattr(query, "_shape", None), getattr(key, "_shape", None), getattr(value, "_shape", None))
    if (bias is not None or packed is not None or None in found
            or len(found[0]) != 4 or len(found[1]) != 4 or len(found[2]) != 4  # type: ignore[arg-type]  # not None
            or query.dtype is not float32 or key.dtype is not float32 or value.dtype is not float32):
        return None
    shapes: list[tuple[int, ...]] = list(map(tuple, found))  # type: ignore[arg-type]  # None: above
    (sq, b, heads, size), (sk, *rest) = shapes[0], shapes[1]
    if tuple(rest) != (b, heads, size) or shapes[2] != shapes[1] or not sq or not sk:
        return None
    dropout, softmax = module.attention_dropout, module.scale_mask_softmax
    if (dropout.training and dropout.p > 0) or not _softmax_is_plain(softmax):
        return None
    if expects_module_calls(softmax, dropout):
        return None
    if module.num_attention_heads_per_partition != module.num_query_groups_per_partition:
        return None
    return _mask_plan(softmax, mask, (b, heads, sq, sk), float(module.softmax_scale))


def _fused(plan: _Plan, query: Any, key: Any, value: Any) -> Any:
    """The split's input when query, key and value are its pieces 0, 1, 2 along the last dimension, unchanged
    (:func:`.host_split.piece_of`; megatron's ``get_query_key_value_tensors`` with as many groups as heads), or query
    and key are :mod:`.host_rope`'s rotary embeddings of such pieces, with ``plan.pieces`` (the tensors the forward
    reads: q, k, v as given), ``plan.versions`` and ``plan.rope`` set; else None."""
    roped_query, roped_key = rope_of(query), rope_of(key)
    if roped_query is None and roped_key is None:
        inputs = (query, key, value)
    elif roped_query is not None and roped_key is not None:
        inputs = (roped_query[0], roped_key[0], value)
    else:
        return None
    found = list(map(piece_of, inputs))
    if None in found:  # (a tuple never equals None)
        return None
    pieces, sources, sizes, dims, indices = zip(*found)  # type: ignore[misc]  # None: above
    source = sources[0]
    if (sources[1] is not source or sources[2] is not source or indices != (0, 1, 2) or dims != (3, 3, 3)
            or len(sizes[0]) != 3 or len(set(sizes[0])) != 1 or not sizes[0][0] or sizes[0][0] != query._shape[3]
            or not source.requires_grad):
        return None
    if roped_query is not None and roped_key is not None:
        pieces = (query, key, pieces[2])  # tensors of their own memory (host_rope's results)
        plan.rope = (roped_query[1], roped_key[1])
    plan.pieces = pieces
    plan.versions = tuple(map(_VERSION, pieces))
    return source


def forward_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``DotProductAttention.forward(self, query, key, value, attention_mask, attn_mask_type=None,
    attention_bias=None, packed_seq_params=None)``: megatron's own forward only (anything else is returned as is)."""
    if not _megatrons_own(op, MODULE):
        return op

    @functools.wraps(op)
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 4 and kwargs.keys() <= _LATER:  # megatron's call: four tensors, the options by keyword
            query, key, value, mask = args
            bias, packed = kwargs.get("attention_bias"), kwargs.get("packed_seq_params")
        else:
            given = dict(zip(_NAMES, args))
            if len(args) > len(_NAMES) or set(kwargs) - set(_NAMES) or set(kwargs) & set(given):
                return op(self, *args, **kwargs)
            given.update(kwargs)
            if not {"query", "key", "value", "attention_mask"} <= set(given):
                return op(self, *args, **kwargs)
            query, key, value, mask = given["query"], given["key"], given["value"], given["attention_mask"]
            bias, packed = given.get("attention_bias"), given.get("packed_seq_params")
        plan = _plan(self, query, key, value, mask, bias, packed)
        if plan is None:
            return op(self, *args, **kwargs)
        source = _fused(plan, query, key, value)
        if source is not None:
            return _functions()[1].apply(source, plan)
        return _functions()[0].apply(query, key, value, plan)

    return forward
