"""Stand-in for ``mindspeed.ops.fusion_attention_v2``."""

from mindspeed.op_builder import FusionAttentionV2OpBuilder

__all__ = ["npu_fusion_attention"]


def npu_fusion_attention(query, key, value, head_num,
                         input_layout, *, pse=None,
                         padding_mask=None, atten_mask=None,
                         scale=1., keep_prob=1., pre_tokens=2147483647,
                         next_tokens=2147483647, inner_precise=0, prefix=None,
                         actual_seq_qlen=None, actual_seq_kvlen=None,
                         sparse_mode=0, gen_mask_parallel=True,
                         sync=False, pse_type=1, q_start_idx=None,
                         kv_start_idx=None):
    return FusionAttentionV2OpBuilder().load().npu_fusion_attention_v2(
        query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob, pre_tokens,
        next_tokens, inner_precise, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, gen_mask_parallel,
        sync, pse_type, q_start_idx, kv_start_idx)
