"""Stand-in for ``mindspeed.ops.npu_moe_token_permute``."""

from mindspeed.op_builder import MoeTokenPermuteOpBuilder

__all__ = ["npu_moe_token_permute"]

moe_token_permute_op_builder = MoeTokenPermuteOpBuilder()


def npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    return moe_token_permute_op_builder.load().npu_moe_token_permute(tokens, indices, num_out_tokens, padded_mode)
