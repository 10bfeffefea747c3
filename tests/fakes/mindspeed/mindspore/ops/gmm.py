"""MindSpore replacements (stand-in). Like the real ones, this module imports torch."""

import torch  # noqa: F401


def _GMM_patched_load(self):
    return ("mindspore", "_GMM_patched_load")


def _GMM_patched_load2(self):
    return ("mindspore", "_GMM_patched_load2")


def npu_gmm(x, weight, *, bias=None, group_list=None, group_type=0, gemm_fusion=False, original_weight=None):
    return ("mindspore", "npu_gmm")


def npu_gmm_v2(x, weight, *, bias=None, group_list=None, group_type=0, gemm_fusion=False, original_weight=None):
    return ("mindspore", "npu_gmm_v2")


class _GmmProxy:
    def npu_gmm(self, *args, **kwargs):
        return ("mindspore", "_GmmProxy.npu_gmm")


class _GmmProxy2:
    def npu_gmm(self, *args, **kwargs):
        return ("mindspore", "_GmmProxy2.npu_gmm")
