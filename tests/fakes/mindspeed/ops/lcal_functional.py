"""Stand-in for ``mindspeed.ops.lcal_functional`` (MindSpeed 2.2.0 layout and signatures)."""

from mindspeed.op_builder import LcalOpBuilder


class CoCConfig:
    def __init__(self, rank_id, rank_size, comm_domain):
        self.rank_id = rank_id
        self.rank_size = rank_size
        self.comm_domain = comm_domain


class TP2DConfig:
    def __init__(self, ag_dim, rs_dim, inner_dim_is_ag):
        self.ag_dim = ag_dim
        self.rs_dim = rs_dim
        self.inner_dim_is_ag = inner_dim_is_ag


class CoCOperations:
    mindspeed_ops = LcalOpBuilder().load()

    def __init__(self):
        self.comm_config = None

    def set_comm_config(self, config):
        self.comm_config = config

    def matmul_all_reduce(self, input1, input2, output, bias=None):
        CoCOperations.mindspeed_ops.matmul_all_reduce(input1, input2, bias, output, 0, 1, "0")
        return output

    def all_gather_matmul(self, input1, input2, output, bias=None):
        CoCOperations.mindspeed_ops.all_gather_matmul(input1, input2, bias, output, 0, 1, "0")
        return output

    def all_gather_matmul_v2(self, input1, input2, output, comm_output, bias=None):
        CoCOperations.mindspeed_ops.all_gather_matmul_v2(input1, input2, bias, output, comm_output, 0, 1, "0")
        return output, comm_output

    def matmul_reduce_scatter(self, input1, input2, output, bias=None):
        CoCOperations.mindspeed_ops.matmul_reduce_scatter(input1, input2, bias, output, 0, 1, "0")
        return output

    def pure_matmul(self, input1, input2, output, bias=None):
        CoCOperations.mindspeed_ops.pure_matmul(input1, input2, bias, output, 0, 1, "0")
        return output

    def all_gather_matmul_reduce_scatter(self, input1, input2, output, tp2d_config, bias=None):
        CoCOperations.mindspeed_ops.all_gather_matmul_reduce_scatter(input1, input2, bias, output, 0, 1, "1")
        return output


coc_ops = CoCOperations()
