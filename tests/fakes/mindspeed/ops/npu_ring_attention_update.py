"""Stand-in for ``mindspeed.ops.npu_ring_attention_update``."""

from mindspeed.op_builder import RingAttentionUpdateOpBuilder

__all__ = ["npu_ring_attention_update"]


op_builder = RingAttentionUpdateOpBuilder()


def npu_ring_attention_update(prev_attn_out, prev_softmax_max, prev_softmax_sum, cur_attn_out, cur_softmax_max,
                              cur_softmax_sum, actual_seq_qlen=None, layout="SBH"):
    return op_builder.load().npu_ring_attention_update(
        prev_attn_out, prev_softmax_max, prev_softmax_sum, cur_attn_out, cur_softmax_max, cur_softmax_sum,
        actual_seq_qlen, layout)
