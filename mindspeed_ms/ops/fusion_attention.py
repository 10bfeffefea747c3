"""Attention with torch_npu's ``npu_fusion_attention`` signature and 7-tuple result."""

from __future__ import annotations

import functools
from typing import Any

import mindspore
import numpy as np
from mindspore import Tensor, mint, ops

from mindspeed_ms.ops._attention_checks import AttentionShapes, check_attention
from mindspeed_ms.ops._dispatch import dispatch_path
from mindspeed_ms.ops._validate import is_half, upcast

__all__ = ["npu_fusion_attention"]

_OP = "npu_fusion_attention"
_NO_LIMIT = 2147483647
MASKED = -1e30  # finite: a fully masked row then gives a uniform row instead of NaN
_STAT_WIDTH = 8  # torch_npu's softmax_max / softmax_sum repeat each row statistic 8 times


@functools.lru_cache(maxsize=64)
def _structural_mask(sq: int, sk: int, sparse_mode: int, pre: int, nxt: int) -> np.ndarray[Any, Any] | None:
    """Return the (sq, sk) boolean mask (True = masked) that a sparse mode implies, or None."""
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    if sparse_mode == 0:
        if pre >= sq and nxt >= sk:
            return None
        return (j - i > nxt) | (i - j > pre)
    if sparse_mode == 2:
        return j > i
    if sparse_mode == 3:
        return j - i > sk - sq
    if sparse_mode == 4:
        shift = sk - sq
        return (j - i - shift > nxt) | (i - j + shift > pre)
    return None


def score_mask(atten_mask: Tensor | None, sq: int, sk: int, sparse_mode: int, pre: int, nxt: int) -> Tensor | None:
    """Return the boolean mask (True = masked) of the scores, or None: ``atten_mask`` for sparse modes 0 and 1,
    or'ed with the band or causal shape the mode (and, in mode 0 with a mask, ``pre``/``nxt``) implies."""
    mask = None
    if atten_mask is not None and sparse_mode in (0, 1):
        mask = atten_mask if atten_mask.dtype == mindspore.bool_ else atten_mask.astype(mindspore.bool_)
    band = _structural_mask(sq, sk, sparse_mode, pre, nxt) if (sparse_mode != 0 or atten_mask is not None) else None
    if band is not None:
        band_t = Tensor(band)
        mask = band_t if mask is None else mint.logical_or(mask, band_t)
    return mask


def to_bnsd(t: Tensor, layout: str, heads: int) -> Tensor:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return ops.transpose(t, (0, 2, 1, 3))
    if layout == "BSH":
        b, s, h = t.shape
        return ops.transpose(t.reshape(b, s, heads, h // heads), (0, 2, 1, 3))
    s, b, h = t.shape  # SBH
    return ops.transpose(t.reshape(s, b, heads, h // heads), (1, 2, 0, 3))


def from_bnsd(t: Tensor, layout: str) -> Tensor:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return ops.transpose(t, (0, 2, 1, 3))
    b, n, s, d = t.shape
    if layout == "BSH":
        return ops.transpose(t, (0, 2, 1, 3)).reshape(b, s, n * d)
    return ops.transpose(t, (2, 0, 1, 3)).reshape(s, b, n * d)  # SBH


def _composite(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    dims: AttentionShapes,
    layout: str,
    pse: Tensor | None,
    atten_mask: Tensor | None,
    scale: float,
    keep_prob: float,
    pre: int,
    nxt: int,
    sparse_mode: int,
) -> tuple[Tensor, Tensor, Tensor]:
    b, n1, n2, sq, sk, d = dims.batch, dims.q_heads, dims.kv_heads, dims.sq, dims.sk, dims.head_dim
    group = n1 // n2
    q = to_bnsd(upcast(query), layout, n1)
    k = to_bnsd(upcast(key), layout, n2)
    v = to_bnsd(upcast(value), layout, n2)
    # Grouped-query attention without repeating key/value: query heads j*group .. j*group+group-1
    # share kv head j, so fold each group into the sequence axis of one batched matmul.
    q = q.reshape(b, n2, group * sq, d)
    scores = mint.matmul(q, ops.transpose(k, (0, 1, 3, 2))).reshape(b, n1, sq, sk)
    if pse is not None:
        scores = (scores + upcast(pse)) * scale
    elif scale != 1.0:
        scores = scores * scale
    mask = score_mask(atten_mask, sq, sk, sparse_mode, pre, nxt)
    if mask is not None:
        scores = ops.masked_fill(scores, mask, MASKED)
    probs = mint.softmax(scores, dim=-1)
    # Row statistics as the fused kernel reports them; p.max() == 1 / sum(exp(s - max)) exactly.
    stopped_scores = ops.stop_gradient(scores)
    row_max = mint.max(stopped_scores, dim=-1, keepdim=True)[0]
    row_sum = 1.0 / mint.max(ops.stop_gradient(probs), dim=-1, keepdim=True)[0]
    if keep_prob < 1.0:
        probs = ops.dropout(probs, p=1.0 - keep_prob)
    out = mint.matmul(probs.reshape(b, n2, group * sq, sk), v).reshape(b, n1, sq, v.shape[-1])
    out = from_bnsd(out, layout)
    if out.dtype != query.dtype:
        out = out.astype(query.dtype)
    stat_shape = (b, n1, sq, _STAT_WIDTH)
    return out, ops.broadcast_to(row_max, stat_shape), ops.broadcast_to(row_sum, stat_shape)


def npu_fusion_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    head_num: int,
    input_layout: str,
    *,
    pse: Tensor | None = None,
    padding_mask: Tensor | None = None,
    atten_mask: Tensor | None = None,
    scale: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = _NO_LIMIT,
    next_tockens: int = _NO_LIMIT,
    inner_precise: int = 0,
    prefix: Any = None,
    actual_seq_qlen: Any = None,
    actual_seq_kvlen: Any = None,
    sparse_mode: int = 0,
    gen_mask_parallel: bool = True,
    sync: bool = False,
    pre_tokens: int | None = None,
    next_tokens: int | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor, int, int, int]:
    """Compute ``dropout(softmax(mask(scale * (q @ k^T + pse)))) @ v`` like torch_npu's fused attention.

    Layouts ``BSH``, ``SBH`` (hidden = heads * head_dim), ``BSND``, ``BNSD`` and ``TND`` (packed
    sequences: ``actual_seq_qlen``/``actual_seq_kvlen`` their cumulative ends, attention within each, the
    sparse mode counted per sequence, the value head dim may differ: ``ops/varlen_attention.py``); grouped-query
    attention when ``key``/``value`` have fewer heads than ``query`` (query head ``h`` uses kv
    head ``h // (head_num // kv_heads)``). ``atten_mask`` is boolean (or uint8), True masks out,
    shaped ``(sq, sk)``, ``(b, 1, sq, sk)`` or ``(b, head_num, sq, sk)``. ``sparse_mode``: 0 uses
    ``atten_mask`` and, when given with it, the ``pre_tockens``/``next_tockens`` band; 1 uses
    ``atten_mask`` alone; 2 is top-left causal, 3 bottom-right causal, 4 a band counted from the
    bottom-right (for 2-4 the mask is derived from the mode; a passed ``atten_mask`` is not needed
    on the composite path). ``keep_prob < 1`` applies dropout to the probabilities.

    On Ascend, float16/bfloat16 inputs with a head dimension that is a multiple of 16 and
    ``keep_prob == 1`` call MindSpore's ``FlashAttentionScore`` (``pse`` pre-multiplied by ``scale``,
    since that kernel adds it after scaling); everything else takes the composite: float32
    ``mint`` matmuls and softmax, cast back to the query's dtype.

    Args:
        query: query tensor in ``input_layout``.
        key: key tensor, same layout; its head count must divide ``head_num``.
        value: value tensor, shaped as ``key`` up to its head dim (which may be smaller or larger).
        head_num: number of query heads.
        input_layout: ``"BSH"``, ``"SBH"``, ``"BSND"`` or ``"BNSD"``.
        pse: optional positional bias broadcastable to ``(b, head_num, sq, sk)``.
        padding_mask: reserved by torch_npu; ignored.
        atten_mask: optional boolean mask, True = masked out.
        scale: multiplies ``q @ k^T + pse``.
        keep_prob: dropout keep probability in (0, 1].
        pre_tockens: band width before the diagonal (``pre_tokens`` is accepted too).
        next_tockens: band width after the diagonal (``next_tokens`` is accepted too).
        inner_precise: reserved; ignored.
        prefix: must be None (prefix sparse mode 5 is not supported).
        actual_seq_qlen: the TND layout's cumulative query ends; None in the other layouts.
        actual_seq_kvlen: the TND layout's cumulative key/value ends; None in the other layouts.
        sparse_mode: 0 to 4, see above.
        gen_mask_parallel: accepted for torch_npu compatibility; no effect.
        sync: accepted for torch_npu compatibility; no effect.
        pre_tokens: MindSpeed's spelling of ``pre_tockens``.
        next_tokens: MindSpeed's spelling of ``next_tockens``.

    Returns:
        ``(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels)``: the output
        in ``input_layout`` and the query's dtype; row max and row sum of ``exp(s - max)`` as float32
        ``(b, head_num, sq, 8)``; ``softmax_out`` is an empty reserved tensor; ``seed``, ``offset``
        are 0 and ``numels`` is the dropout mask size (0 without dropout).

    Raises:
        TypeError: on non-tensor inputs, mismatched dtypes or a non-boolean mask.
        ValueError: on an unknown layout, shapes that do not fit, ``head_num`` not dividing the
            hidden size, an unsupported ``sparse_mode``, ``keep_prob`` outside (0, 1] or
            conflicting ``pre_tokens``/``pre_tockens`` spellings.
    """
    pre = _merge_alias("pre_tockens", pre_tockens, "pre_tokens", pre_tokens)
    nxt = _merge_alias("next_tockens", next_tockens, "next_tokens", next_tokens)
    if input_layout == "TND":
        return _packed(query, key, value, head_num, pse, atten_mask, scale, keep_prob, pre, nxt, sparse_mode, prefix,
                       actual_seq_qlen, actual_seq_kvlen)
    dims = check_attention(
        _OP,
        query,
        key,
        value,
        head_num,
        input_layout,
        pse,
        atten_mask,
        scale,
        keep_prob,
        sparse_mode,
        prefix,
        actual_seq_qlen,
        actual_seq_kvlen,
    )
    if (dispatch_path("fusion_attention") == "fused" and is_half(query) and dims.head_dim % 16 == 0
            and keep_prob == 1.0 and tuple(value.shape) == tuple(key.shape)):
        kernel = _flash_kernel(head_num, float(scale), pre, nxt, inner_precise, input_layout, sparse_mode)
        shift = (pse * scale).astype(query.dtype) if pse is not None else None
        mask = atten_mask
        smax, ssum, sout, out = kernel(query, key, value, shift, None, None, mask, None, None, None)
        return out, smax, ssum, sout, 0, 0, 0
    out, smax, ssum = _composite(
        query,
        key,
        value,
        dims,
        input_layout,
        pse,
        atten_mask,
        float(scale),
        float(keep_prob),
        pre,
        nxt,
        sparse_mode,
    )
    numels = dims.batch * dims.q_heads * dims.sq * dims.sk if keep_prob < 1.0 else 0
    return out, smax, ssum, ops.zeros((0,), mindspore.float32), 0, 0, numels


def _packed(query: Tensor, key: Tensor, value: Tensor, head_num: int, pse: Any, atten_mask: Any, scale: Any,
            keep_prob: Any, pre: int, nxt: int, sparse_mode: Any, prefix: Any, actual_seq_qlen: Any,
            actual_seq_kvlen: Any) -> tuple[Tensor, Tensor, Tensor, Tensor, int, int, int]:
    """The TND layout: the packed tokens as one BSND batch, masked across sequences (ops/varlen_attention.py);
    the output ``(T, head_num, value_head_dim)``, the statistics ``(T, head_num, 8)``."""
    from mindspeed_ms.ops.varlen_attention import check_tnd, segment_mask

    dims, q_ends, kv_ends = check_tnd(query, key, value, head_num, pse, atten_mask, scale, keep_prob, sparse_mode,
                                      prefix, actual_seq_qlen, actual_seq_kvlen)
    mode = int(sparse_mode)
    mask = segment_mask(q_ends, kv_ends, lambda sq, sk: _structural_mask(sq, sk, mode, pre, nxt) if mode else None)
    tq, tk, n1, n2, d = dims.sq, dims.sk, dims.q_heads, dims.kv_heads, dims.head_dim
    dv = value.shape[-1]
    out, smax, ssum = _composite(query.reshape(1, tq, n1, d), key.reshape(1, tk, n2, d), value.reshape(1, tk, n2, dv),
                                 dims, "BSND", None, Tensor(mask), float(scale), float(keep_prob), pre, nxt, 1)
    smax, ssum = (ops.transpose(s[0], (1, 0, 2)) for s in (smax, ssum))
    numels = n1 * tq * tk if keep_prob < 1.0 else 0
    return out.reshape(tq, n1, dv), smax, ssum, ops.zeros((0,), mindspore.float32), 0, 0, numels


@functools.lru_cache(maxsize=32)
def _flash_kernel(heads: int, scale: float, pre: int, nxt: int, inner: int, layout: str, sparse_mode: int) -> Any:
    from mindspore.ops.operations.nn_ops import FlashAttentionScore

    return FlashAttentionScore(heads, 1.0, scale, pre, nxt, inner, layout, sparse_mode)


def _merge_alias(name: str, value: int, alias: str, alias_value: int | None) -> int:
    if alias_value is None:
        return int(value)
    if value != _NO_LIMIT and value != alias_value:
        from mindspeed_ms.ops._validate import OpArgumentError

        raise OpArgumentError(_OP, alias, f"conflicts with {name}={value}; pass only one spelling")
    return int(alias_value)
