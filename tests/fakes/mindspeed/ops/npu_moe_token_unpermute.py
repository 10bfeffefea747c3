"""Stand-in for ``mindspeed.ops.npu_moe_token_unpermute``."""

from mindspeed.op_builder import MoeTokenUnpermuteOpBuilder

__all__ = ["npu_moe_token_unpermute"]

moe_token_unpermute_op_builder = MoeTokenUnpermuteOpBuilder()


def npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    return moe_token_unpermute_op_builder.load().npu_moe_token_unpermute(
        permuted_tokens, sorted_indices, probs, padded_mode, restore_shape)
