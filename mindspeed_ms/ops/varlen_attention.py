"""``npu_fusion_attention``'s TND layout: packed variable-length sequences, attention within each one.

MindSpeed-LLM's ``--reset-position-ids`` (DeepSeek-V3's example) packs a micro-batch's documents along one token
axis, ``(T, N, D)`` = ``(b * s, heads, head_dim)``, and passes the documents' cumulative end offsets as
``actual_seq_qlen`` / ``actual_seq_kvlen``. A query token attends only to key tokens of its own document, and
within it as the sparse mode says (MindSpeed-LLM uses 4 with ``next_tockens = 0``: causal). Multi-latent attention
without padding (``--mla-fa-without-pad``) passes a value head dim smaller than the query/key one.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from mindspore import Tensor

from mindspeed_ms.ops._attention_checks import AttentionShapes
from mindspeed_ms.ops._validate import OpArgumentError, OpDTypeError, require_float, shape_of

__all__ = ["check_tnd", "segment_mask"]

_OP = "npu_fusion_attention"


def _ends(name: str, given: Any, tokens: int) -> list[int]:
    """Return the cumulative end offsets ``given`` as a list of ints; raise unless they partition ``tokens``."""
    if given is None:
        raise OpArgumentError(_OP, name, "the TND layout needs the sequences' cumulative end offsets, got None")
    if isinstance(given, Tensor):
        given = given.asnumpy().tolist()
    elif hasattr(given, "tolist") and not isinstance(given, (list, tuple)):
        given = given.tolist()
    if not isinstance(given, (list, tuple)) or not given or any(
            isinstance(e, bool) or not isinstance(e, (int, np.integer)) for e in given):
        raise OpArgumentError(_OP, name, f"expected a non-empty list of int offsets, got {given!r}")
    ends = [int(e) for e in given]
    if any(b < a for a, b in zip([0, *ends], ends)) or ends[-1] != tokens:
        raise OpArgumentError(
            _OP, name, f"expected non-decreasing cumulative ends finishing at the token count {tokens}, got {ends}")
    return ends


def segment_mask(q_ends: list[int], kv_ends: list[int],
                 block: Callable[[int, int], np.ndarray[Any, Any] | None]) -> np.ndarray[Any, Any]:
    """Return the ``(T_q, T_kv)`` boolean mask (True = masked) of packed sequences: everything outside a query's own
    sequence, and inside it ``block(sq, sk)`` (the sparse mode's shape counted within the sequence; None: none)."""
    mask = np.ones((q_ends[-1], kv_ends[-1]), bool)
    for q0, q1, k0, k1 in zip([0, *q_ends], q_ends, [0, *kv_ends], kv_ends):
        shape = block(q1 - q0, k1 - k0)
        mask[q0:q1, k0:k1] = False if shape is None else shape
    return mask


def check_tnd(query: Tensor, key: Tensor, value: Tensor, head_num: Any, pse: Any, atten_mask: Any, scale: Any,
                  keep_prob: Any, sparse_mode: Any, prefix: Any, actual_seq_qlen: Any,
                  actual_seq_kvlen: Any) -> tuple[AttentionShapes, list[int], list[int]]:
    """Check a TND attention call; return its sizes (one batch of ``T`` tokens) and the query and key/value
    sequences' cumulative ends.

    Raises:
        OpArgumentError: shapes that do not fit, offsets that do not partition the tokens, a ``pse``, ``prefix``
            or an explicit mask (``sparse_mode`` 0 with ``atten_mask``, or 1: the packed mask's meaning is not
            implemented), or a sequence with queries and no keys.
        OpDTypeError: query, key and value of different dtypes.
    """
    if isinstance(head_num, bool) or not isinstance(head_num, int) or head_num <= 0:
        raise OpArgumentError(_OP, "head_num", f"expected a positive int, got {head_num!r}")
    for name, t in (("query", query), ("key", key), ("value", value)):
        require_float(_OP, name, t)
        if len(shape_of(t)) != 3:
            raise OpArgumentError(_OP, name, f"expected a 3-D (T, N, D) tensor for layout TND, got {shape_of(t)}")
    if not query.dtype == key.dtype == value.dtype:
        raise OpDTypeError(_OP, "key", f"expected query, key and value of one dtype, got {query.dtype}, "
                                       f"{key.dtype}, {value.dtype}")
    (tq, n1, d), (tk, n2, kd), (tv, nv, _) = shape_of(query), shape_of(key), shape_of(value)
    if n1 != head_num:
        raise OpArgumentError(_OP, "head_num", f"expected the query's head count {n1} in layout TND, got {head_num}")
    if kd != d or n1 % n2:
        raise OpArgumentError(_OP, "key", f"expected head dim {d} and a head count dividing {n1}, got {shape_of(key)}")
    if (tv, nv) != (tk, n2):
        raise OpArgumentError(_OP, "value", f"expected {tk} tokens and {n2} heads as key, got {shape_of(value)}")
    for name, given, why in (("pse", pse, "a positional bias"), ("prefix", prefix, "prefix mode")):
        if given is not None:
            raise OpArgumentError(_OP, name, f"{why} is not supported in the TND layout; pass None")
    with_mask = sparse_mode == 0 and atten_mask is not None
    if isinstance(sparse_mode, bool) or sparse_mode not in (0, 2, 3, 4) or with_mask:
        raise OpArgumentError(
            _OP, "sparse_mode", f"the TND layout supports 0 without atten_mask, 2, 3 (causal) and 4 (band), got "
                                f"{sparse_mode!r}{' with an atten_mask' if with_mask else ''}")
    if isinstance(keep_prob, bool) or not isinstance(keep_prob, (int, float)) or not 0.0 < keep_prob <= 1.0:
        raise OpArgumentError(_OP, "keep_prob", f"expected a float in (0, 1], got {keep_prob!r}")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise OpArgumentError(_OP, "scale", f"expected a float, got {scale!r}")
    q_ends = _ends("actual_seq_qlen", actual_seq_qlen, tq)
    kv_ends = _ends("actual_seq_kvlen", actual_seq_kvlen, tk)
    if len(q_ends) != len(kv_ends):
        raise OpArgumentError(_OP, "actual_seq_kvlen", f"expected {len(q_ends)} sequences as actual_seq_qlen, got "
                                                       f"{len(kv_ends)}")
    for i, (q0, q1, k0, k1) in enumerate(zip([0, *q_ends], q_ends, [0, *kv_ends], kv_ends)):
        if q1 > q0 and k1 == k0:
            raise OpArgumentError(_OP, "actual_seq_kvlen", f"sequence {i} has {q1 - q0} queries and no keys")
    return AttentionShapes(1, n1, n2, tq, tk, d), q_ends, kv_ends
