"""Flash attention's explicit backward from saved softmax statistics, torch_npu's ``npu_fusion_attention_grad``."""

from __future__ import annotations

from typing import Any

import mindspore
from mindspore import Tensor, mint, ops

from mindspeed_ms.ops._attention_checks import AttentionShapes, check_attention
from mindspeed_ms.ops._validate import OpArgumentError, require_float, shape_of, upcast
from mindspeed_ms.ops.errors import OpUnavailableError
from mindspeed_ms.ops.fusion_attention import MASKED, from_bnsd, score_mask, to_bnsd

__all__ = ["npu_fusion_attention_grad"]

_OP = "npu_fusion_attention_grad"
_NO_LIMIT = 2147483647


def npu_fusion_attention_grad(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    dy: Tensor,
    head_num: int,
    input_layout: str,
    *,
    pse: Tensor | None = None,
    padding_mask: Tensor | None = None,
    atten_mask: Tensor | None = None,
    softmax_max: Tensor | None = None,
    softmax_sum: Tensor | None = None,
    softmax_in: Tensor | None = None,
    attention_in: Tensor | None = None,
    scale_value: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = _NO_LIMIT,
    next_tockens: int = _NO_LIMIT,
    inner_precise: int = 0,
    prefix: Any = None,
    actual_seq_qlen: Any = None,
    actual_seq_kvlen: Any = None,
    sparse_mode: int = 0,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The gradients of :func:`mindspeed_ms.ops.npu_fusion_attention` from its saved statistics.

    With ``S = mask(scale * (q @ k^T + pse))`` (masked entries ``-1e30`` as in the forward),
    ``P = exp(S - softmax_max) / softmax_sum`` (the row statistics as the forward returns them, or as ring
    attention merged them over all key blocks), ``O = attention_in`` (the output they belong to) and
    ``dO = dy``: ``dv = P^T dO``, ``dS = P * (dO v^T - rowsum(dO * O))`` (zero where masked),
    ``dq = scale * dS k``, ``dk = scale * dS^T q``, ``dpse = scale * dS`` summed to ``pse``'s shape. With the
    statistics and output of the same call this is the exact gradient of the forward composite; with ring
    attention's merged ones it is the block's share of the gradient of the whole attention. Computed in float32
    and returned in the inputs' dtypes; grouped-query heads are summed into their key/value head.

    Args:
        query, key, value, head_num, input_layout, pse, atten_mask, pre_tockens, next_tockens, sparse_mode: as for
            the forward call (layouts BSH, SBH, BSND, BNSD; sparse modes 0-4).
        dy: the gradient of the attention output, shaped like ``query``.
        padding_mask, softmax_in, inner_precise: reserved by torch_npu; ignored.
        softmax_max: ``(b, head_num, sq, k)`` float32 row maxima (column 0 is read; the forward repeats it 8 times).
        softmax_sum: ``(b, head_num, sq, k)`` float32 row sums of ``exp(S - softmax_max)``.
        attention_in: the attention output, shaped like ``query``.
        scale_value: the forward's ``scale``.
        keep_prob: must be 1: the forward's dropout mask cannot be regenerated from ``seed``/``offset`` here.
        prefix, actual_seq_qlen, actual_seq_kvlen: must be None (no prefix mode, no TND layout).

    Returns:
        ``(dq, dk, dv, dpse)``; ``dpse`` is an empty float32 tensor without ``pse``.

    Raises:
        OpUnavailableError: ``keep_prob < 1`` (a ``NotImplementedError``, naming ``--attention-dropout``).
        OpArgumentError: a missing or misshaped statistic, output or gradient, or what the forward rejects.
        TypeError: a non-float tensor.
    """
    del padding_mask, softmax_in, inner_precise
    dims = check_attention(_OP, query, key, value, head_num, input_layout, pse, atten_mask, scale_value, keep_prob,
                           sparse_mode, prefix, actual_seq_qlen, actual_seq_kvlen)
    if keep_prob < 1.0:
        raise OpUnavailableError(
            _OP, "--attention-dropout",
            f"attention dropout (keep_prob={keep_prob}) needs the forward's dropout mask, which this backend cannot "
            f"regenerate from seed/offset; train with --attention-dropout 0.0")
    attention_in, softmax_max, softmax_sum = _check_saved(dims, query, dy, attention_in, softmax_max, softmax_sum)
    b, n1, n2, sq, sk, d = dims.batch, dims.q_heads, dims.kv_heads, dims.sq, dims.sk, dims.head_dim
    group = n1 // n2
    scale = float(scale_value)
    q = to_bnsd(upcast(query), input_layout, n1)
    k = to_bnsd(upcast(key), input_layout, n2)
    v = to_bnsd(upcast(value), input_layout, n2)
    grad = to_bnsd(upcast(dy), input_layout, n1)
    out = to_bnsd(upcast(attention_in), input_layout, n1)
    # Query heads j*group .. j*group+group-1 share kv head j: fold each group into the sequence axis.
    scores = mint.matmul(q.reshape(b, n2, group * sq, d), _t(k)).reshape(b, n1, sq, sk)
    if pse is not None:
        scores = (scores + upcast(pse)) * scale
    elif scale != 1.0:
        scores = scores * scale
    mask = score_mask(atten_mask, sq, sk, sparse_mode, int(pre_tockens), int(next_tockens))
    if mask is not None:
        scores = ops.masked_fill(scores, mask, MASKED)
    row_max = softmax_max.astype(mindspore.float32)[..., :1]
    row_sum = softmax_sum.astype(mindspore.float32)[..., :1]
    probs = mint.exp(scores - row_max) / row_sum
    grad_folded = grad.reshape(b, n2, group * sq, d)
    dv = mint.matmul(_t(probs.reshape(b, n2, group * sq, sk)), grad_folded)
    dprobs = mint.matmul(grad_folded, _t(v)).reshape(b, n1, sq, sk)
    delta = mint.sum(grad * out, dim=-1, keepdim=True)
    dscores = probs * (dprobs - delta)
    if mask is not None:
        dscores = ops.masked_fill(dscores, mask, 0.0)
    dscores = dscores * scale if scale != 1.0 else dscores
    dq = mint.matmul(dscores.reshape(b, n2, group * sq, sk), k).reshape(b, n1, sq, d)
    dk = mint.matmul(_t(dscores.reshape(b, n2, group * sq, sk)), q.reshape(b, n2, group * sq, d))
    dpse = ops.zeros((0,), mindspore.float32) if pse is None else _sum_to(dscores, shape_of(pse)).astype(pse.dtype)
    return (from_bnsd(dq, input_layout).astype(query.dtype), from_bnsd(dk, input_layout).astype(key.dtype),
            from_bnsd(dv, input_layout).astype(value.dtype), dpse)


def _t(t: Tensor) -> Tensor:
    return ops.transpose(t, (0, 1, 3, 2))


def _sum_to(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``t`` over the axes where ``shape`` has 1 and ``t`` does not (``pse`` broadcast in the forward)."""
    axes = tuple(i for i, (want, have) in enumerate(zip(shape, shape_of(t))) if want == 1 and have != 1)
    return mint.sum(t, dim=axes, keepdim=True) if axes else t


def _check_saved(dims: AttentionShapes, query: Tensor, dy: Any, attention_in: Any, softmax_max: Any,
                 softmax_sum: Any) -> tuple[Tensor, Tensor, Tensor]:
    """Return ``(attention_in, softmax_max, softmax_sum)``; raise unless they and the gradient fit the query."""
    for name, t in (("dy", dy), ("attention_in", attention_in)):
        if t is None:
            raise OpArgumentError(_OP, name, "expected a tensor shaped like query, got None")
        require_float(_OP, name, t)
        if shape_of(t) != shape_of(query):
            raise OpArgumentError(_OP, name, f"expected the query's shape {shape_of(query)}, got {shape_of(t)}")
    rows = (dims.batch, dims.q_heads, dims.sq)
    for name, t in (("softmax_max", softmax_max), ("softmax_sum", softmax_sum)):
        if t is None:
            raise OpArgumentError(_OP, name, f"expected the forward's float32 statistics {(*rows, 8)}, got None")
        require_float(_OP, name, t)
        got = shape_of(t)
        if len(got) != 4 or got[:3] != rows or got[3] < 1:
            raise OpArgumentError(_OP, name, f"expected shape {(*rows, 8)} (b, head_num, sq, 8), got {got}")
    return attention_in, softmax_max, softmax_sum
