"""Stand-in for ``mindspeed.ops.gmm``."""

from mindspeed.op_builder import GMMOpBuilder, GMMV2OpBuilder


def npu_gmm(x, weight, *, bias=None, group_list=None, group_type=0):
    return GMMOpBuilder().load().npu_gmm([x], [weight], bias, group_list, group_type, 0)


def npu_gmm_v2(x, weight, *, bias=None, group_list=None, group_type=0):
    return GMMV2OpBuilder().load().npu_gmm([x], [weight], bias, group_list, group_type, 1)
