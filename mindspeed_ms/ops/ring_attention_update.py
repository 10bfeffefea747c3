"""Merging two partial attention results (ring attention) with MindSpeed's ``npu_ring_attention_update`` signature."""

from __future__ import annotations

from typing import Any

from mindspore import Tensor, mint

from mindspeed_ms.ops._validate import OpArgumentError, require_float, require_ndim, shape_of, upcast

__all__ = ["npu_ring_attention_update"]

_OP = "npu_ring_attention_update"


def npu_ring_attention_update(prev_attn_out: Tensor, prev_softmax_max: Tensor, prev_softmax_sum: Tensor,
                              cur_attn_out: Tensor, cur_softmax_max: Tensor, cur_softmax_sum: Tensor,
                              actual_seq_qlen: Any = None, layout: str = "SBH") -> tuple[Tensor, Tensor, Tensor]:
    """Merge the attention of a query block over two key blocks, given each one's softmax max and sum.

    ``max = maximum(prev_max, cur_max)``; each side's sum is rescaled by ``exp(its_max - max)``; ``sum`` is their
    total; the output is ``prev_out * prev_sum' / sum + cur_out * cur_sum' / sum`` (each head's scale broadcast over
    its ``d`` channels), cast to the output's dtype: what MindSpeed's context parallelism computes without
    ``--use-fused-ring-attention-update`` (``forward_update_without_fused``). A composite of ``mint`` primitives
    (MindSpore's RingAttentionUpdate kernel is Ascend-only).

    Args:
        prev_attn_out: ``(s, b, n*d)`` attention output so far (layout SBH).
        prev_softmax_max: ``(b, n, s, 8)`` float32 row maxima so far (the 8 copies of the fused kernel's layout).
        prev_softmax_sum: ``(b, n, s, 8)`` float32 row sums so far.
        cur_attn_out: the current block's output, like ``prev_attn_out``.
        cur_softmax_max: the current block's maxima, like ``prev_softmax_max``.
        cur_softmax_sum: the current block's sums, like ``prev_softmax_sum``.
        actual_seq_qlen: for layout TND only.
        layout: ``"SBH"``, the only one supported here.

    Returns:
        ``(attn_out, softmax_max, softmax_sum)``.

    Raises:
        OpArgumentError: layout TND (variable-length packed sequences: drop ``--use-fused-ring-attention-update``) or
            another layout, or shapes that do not fit (a ``ValueError``).
        TypeError: a non-float input.
    """
    if layout != "SBH":
        raise OpArgumentError(_OP, "layout", f"only 'SBH' is implemented on this backend, got {layout!r}; for packed "
                                             f"sequences (TND) leave --use-fused-ring-attention-update out")
    del actual_seq_qlen  # TND only
    for name, tensor in (("prev_attn_out", prev_attn_out), ("cur_attn_out", cur_attn_out)):
        require_float(_OP, name, tensor)
        require_ndim(_OP, name, tensor, (3,), "(s, b, n*d)")
    stats = {"prev_softmax_max": prev_softmax_max, "prev_softmax_sum": prev_softmax_sum,
             "cur_softmax_max": cur_softmax_max, "cur_softmax_sum": cur_softmax_sum}
    for name, tensor in stats.items():
        require_float(_OP, name, tensor)
        require_ndim(_OP, name, tensor, (4,), "(b, n, s, 8)")
    s, b, h = shape_of(prev_attn_out)
    batch, heads, rows, _ = shape_of(prev_softmax_max)
    if (batch, rows) != (b, s) or h % heads or shape_of(cur_attn_out) != (s, b, h):
        raise OpArgumentError(_OP, "prev_softmax_max", f"shape {shape_of(prev_softmax_max)} does not fit the outputs "
                                                       f"{shape_of(prev_attn_out)} / {shape_of(cur_attn_out)}")
    softmax_max = mint.maximum(prev_softmax_max, cur_softmax_max)
    prev_scaled = prev_softmax_sum * mint.exp(prev_softmax_max - softmax_max)
    cur_scaled = cur_softmax_sum * mint.exp(cur_softmax_max - softmax_max)
    softmax_sum = prev_scaled + cur_scaled

    def per_channel(scale: Tensor) -> Tensor:  # (b, n, s, 8) -> (s, b, n*d), each head's scale over its channels
        first = scale[..., :1].broadcast_to((batch, heads, rows, h // heads))
        return first.permute(2, 0, 1, 3).reshape(s, b, h)

    prev_out, cur_out = upcast(prev_attn_out), upcast(cur_attn_out)
    out = prev_out * per_channel(prev_scaled / softmax_sum) + cur_out * per_channel(cur_scaled / softmax_sum)
    return out.astype(prev_attn_out.dtype), softmax_max, softmax_sum
