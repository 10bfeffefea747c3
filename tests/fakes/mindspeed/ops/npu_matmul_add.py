"""Stand-in for ``mindspeed.ops.npu_matmul_add``."""

from mindspeed.op_builder import MatmulAddOpBuilder

__all__ = ["npu_matmul_add_fp32"]

matmul_add_op_builder = MatmulAddOpBuilder()


def npu_matmul_add_fp32(total_input, grad_output, grad):
    matmul_add_op_builder.load().npu_matmul_add_fp32(grad_output, total_input, grad)


def npu_matmul_add_fp16(total_input, grad_output, grad):
    matmul_add_op_builder.load().npu_matmul_add_fp16(grad_output, total_input, grad)
