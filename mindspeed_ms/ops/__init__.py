"""MindSpore implementations of MindSpeed's fused and compute-communication ops.

Pure functions with torch_npu / MindSpeed signatures: fused MindSpore kernels on Ascend, composites
of ``mindspore.mint`` / ``mindspore.ops`` primitives elsewhere. :func:`dispatch_path` tells which
path an op takes; :func:`force_composite` forces the composite.
"""

from __future__ import annotations

from mindspeed_ms.ops._dispatch import (
    COMPOSITE_ENV_VAR,
    OP_NAMES,
    clear_dispatch_cache,
    dispatch_path,
    force_composite,
)
from mindspeed_ms.ops._validate import OpArgumentError, OpDTypeError
from mindspeed_ms.ops.fusion_attention import npu_fusion_attention
from mindspeed_ms.ops.fusion_attention_grad import npu_fusion_attention_grad
from mindspeed_ms.ops.gmm import npu_gmm, npu_gmm_v2
from mindspeed_ms.ops.lcal_functional import (
    all_gather_matmul,
    all_gather_matmul_v2,
    matmul_all_reduce,
    matmul_reduce_scatter,
    pure_matmul,
)
from mindspeed_ms.ops.matmul_add import npu_groupmatmul_add_fp32, npu_matmul_add_fp32
from mindspeed_ms.ops.moe_token import npu_moe_token_permute, npu_moe_token_unpermute
from mindspeed_ms.ops.ring_attention_update import npu_ring_attention_update
from mindspeed_ms.ops.rms_norm import npu_rms_norm
from mindspeed_ms.ops.rotary import npu_rotary_position_embedding
from mindspeed_ms.ops.swiglu import npu_swiglu

__all__ = [
    "COMPOSITE_ENV_VAR",
    "OP_NAMES",
    "OpArgumentError",
    "OpDTypeError",
    "all_gather_matmul",
    "clear_dispatch_cache",
    "all_gather_matmul_v2",
    "dispatch_path",
    "force_composite",
    "matmul_all_reduce",
    "matmul_reduce_scatter",
    "npu_fusion_attention",
    "npu_fusion_attention_grad",
    "npu_gmm",
    "npu_gmm_v2",
    "npu_groupmatmul_add_fp32",
    "npu_matmul_add_fp32",
    "npu_moe_token_permute",
    "npu_moe_token_unpermute",
    "npu_ring_attention_update",
    "npu_rms_norm",
    "npu_rotary_position_embedding",
    "npu_swiglu",
    "pure_matmul",
]
