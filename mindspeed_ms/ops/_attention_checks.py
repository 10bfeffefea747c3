"""Argument checks of ``npu_fusion_attention``: layouts, head counts, masks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mindspore
from mindspore import Tensor

from mindspeed_ms.ops._validate import (
    OpArgumentError,
    OpDTypeError,
    require_float,
    require_tensor,
    shape_of,
)

__all__ = ["AttentionShapes", "LAYOUTS", "check_attention"]

LAYOUTS = ("BSH", "SBH", "BSND", "BNSD")


@dataclass(frozen=True)
class AttentionShapes:
    """The sizes an attention call works with."""

    batch: int
    q_heads: int
    kv_heads: int
    sq: int
    sk: int
    head_dim: int


def _split(op: str, name: str, t: Tensor, layout: str, heads: int | None, head_dim: int) -> tuple[int, int, int, int]:
    """Return (batch, heads, seq, head_dim) of ``t`` in ``layout``."""
    s = shape_of(t)
    want = 3 if layout in ("BSH", "SBH") else 4
    if len(s) != want:
        raise OpArgumentError(op, name, f"expected a {want}-D tensor for layout {layout} ({layout}), got shape {s}")
    if layout == "BNSD":
        return s[0], s[1], s[2], s[3]
    if layout == "BSND":
        return s[0], s[2], s[1], s[3]
    b, seq = (s[0], s[1]) if layout == "BSH" else (s[1], s[0])
    hidden = s[2]
    if heads is not None:
        if hidden % heads:
            raise OpArgumentError(
                op,
                "head_num",
                f"expected a divisor of the hidden size {hidden} of {name} (shape {s}), got {heads}",
            )
        return b, heads, seq, hidden // heads
    if hidden % head_dim:
        raise OpArgumentError(
            op, name, f"expected a hidden size that is a multiple of the head dim {head_dim}, got shape {s}"
        )
    return b, hidden // head_dim, seq, head_dim


def check_attention(
    op: str,
    query: Any,
    key: Any,
    value: Any,
    head_num: Any,
    layout: Any,
    pse: Any,
    atten_mask: Any,
    scale: Any,
    keep_prob: Any,
    sparse_mode: Any,
    prefix: Any,
    actual_seq_qlen: Any,
    actual_seq_kvlen: Any,
) -> AttentionShapes:
    """Validate every argument of an attention call and return its sizes.

    Raises:
        TypeError: on non-tensor inputs, mismatched dtypes or a mask that is not bool/uint8.
        ValueError: on anything else that does not fit.
    """
    if layout not in LAYOUTS:
        also = " (TND: npu_fusion_attention only)" if layout == "TND" else ""
        raise OpArgumentError(op, "input_layout", f"expected one of {', '.join(LAYOUTS)}{also}, got {layout!r}")
    if isinstance(head_num, bool) or not isinstance(head_num, int) or head_num <= 0:
        raise OpArgumentError(op, "head_num", f"expected a positive int, got {head_num!r}")
    for name, t in (("query", query), ("key", key), ("value", value)):
        require_float(op, name, t)
    if not query.dtype == key.dtype == value.dtype:
        raise OpDTypeError(
            op,
            "key",
            f"expected query, key and value of one dtype, got {query.dtype}, {key.dtype}, {value.dtype}",
        )
    b, n1, sq, d = _split(op, "query", query, layout, head_num, 0)
    if n1 != head_num:
        raise OpArgumentError(
            op, "head_num", f"expected the query's head count {n1} in layout {layout}, got {head_num}"
        )
    kb, n2, sk, kd = _split(op, "key", key, layout, None, d)
    # The value's head dim may differ from the query's (multi-latent attention without padding)
    vb, vn, vs, _ = _split(op, "value", value, layout, n2, 0) if len(shape_of(value)) == len(shape_of(key)) \
        else (None, None, None, None)
    if (vb, vn, vs) != (kb, n2, sk):
        raise OpArgumentError(op, "value", f"expected the shape of key {shape_of(key)} up to the head dim "
                                           f"({n2} heads), got {shape_of(value)}")
    if kb != b or kd != d:
        raise OpArgumentError(
            op,
            "key",
            f"expected batch {b} and head dim {d} as in query {shape_of(query)}, got shape {shape_of(key)}",
        )
    if n1 % n2:
        raise OpArgumentError(op, "key", f"expected a head count dividing head_num {head_num}, got {n2} heads")
    full = (b, n1, sq, sk)
    if pse is not None:
        require_float(op, "pse", pse)
        ps = shape_of(pse)
        if len(ps) != 4 or any(p not in (1, f) for p, f in zip(ps, full)):
            raise OpArgumentError(op, "pse", f"expected a 4-D shape broadcastable to {full}, got {ps}")
    if isinstance(sparse_mode, bool) or sparse_mode not in (0, 1, 2, 3, 4):
        raise OpArgumentError(
            op, "sparse_mode", f"expected 0, 1 (mask), 2, 3 (causal) or 4 (band), got {sparse_mode!r}"
        )
    if atten_mask is not None:
        require_tensor(op, "atten_mask", atten_mask)
        if atten_mask.dtype not in (mindspore.bool_, mindspore.uint8):
            raise OpDTypeError(
                op, "atten_mask", f"expected dtype bool or uint8 (True masks out), got {atten_mask.dtype}"
            )
        ms_ = shape_of(atten_mask)
        fits = ms_ == (sq, sk) or (len(ms_) == 4 and ms_[2:] == (sq, sk) and ms_[0] in (1, b) and ms_[1] in (1, n1))
        if sparse_mode in (0, 1) and not fits:
            raise OpArgumentError(op, "atten_mask", f"expected shape {(sq, sk)}, {(b, 1, sq, sk)} or {full}, got {ms_}")
    if sparse_mode == 1 and atten_mask is None:
        raise OpArgumentError(op, "atten_mask", "sparse_mode 1 needs an atten_mask, got None")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise OpArgumentError(op, "scale", f"expected a float, got {scale!r}")
    if isinstance(keep_prob, bool) or not isinstance(keep_prob, (int, float)) or not 0.0 < keep_prob <= 1.0:
        raise OpArgumentError(op, "keep_prob", f"expected a float in (0, 1], got {keep_prob!r}")
    for name, v in (
        ("prefix", prefix),
        ("actual_seq_qlen", actual_seq_qlen),
        ("actual_seq_kvlen", actual_seq_kvlen),
    ):
        if v is not None:
            raise OpArgumentError(op, name, "expected None: prefix mode and the TND layout are not supported")
    return AttentionShapes(b, n1, n2, sq, sk, d)
