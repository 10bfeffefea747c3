"""Stand-in for ``mindspeed.ops.npu_rotary_position_embedding``."""

from mindspeed.op_builder import RotaryPositionEmbeddingOpBuilder

__all__ = ["npu_rotary_position_embedding"]

rope_op_builder = RotaryPositionEmbeddingOpBuilder()


def npu_rotary_position_embedding(x, cos, sin, mode=0):
    return rope_op_builder.load().npu_rotary_position_embedding(x, cos, sin, mode)
