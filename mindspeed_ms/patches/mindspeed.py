"""Built-in provider: MindSpeed's fused-op entry points, pointed at :mod:`mindspeed_ms.ops`.

MindSpeed's ``mindspeed.ops.*`` functions load C++ extensions built against torch_npu (op
builders), which cannot load under MindSpore on any device; the MindSpore implementations replace
them. The compute-communication overlap methods of ``CoCOperations`` are replaced only when the
training script runs with ``--use-ascend-coc``. Methods are patched on the class, so the module
singleton ``coc_ops`` (created when ``lcal_functional`` is imported) uses them too. MindSpeed's RMSNorm
and SwiGLU fusions call ``torch_npu.npu_rms_norm`` / ``torch_npu.npu_swiglu`` directly: MSAdapter's
``torch_npu`` maps those to MindSpore's fused kernels on Ascend, and the ``msadapter_cpu`` provider
points them at :mod:`mindspeed_ms.ops` on the CPU.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPEED_REQUIREMENT

name = "mindspeed"

_MINDSPEED = (MINDSPEED_REQUIREMENT,)
_OPS_MODULE = "mindspeed_ms.ops"
_BUILDER = "loads a torch_npu C++ op builder, which cannot load under MindSpore"

#: target -> (name in mindspeed_ms.ops, what MindSpeed's version does)
_OPS = {
    "mindspeed.ops.npu_matmul_add.npu_matmul_add_fp32": ("npu_matmul_add_fp32", "fused wgrad accumulation"),
    "mindspeed.ops.gmm.npu_gmm": ("npu_gmm", "grouped matmul (MoE experts)"),
    "mindspeed.ops.gmm.npu_gmm_v2": ("npu_gmm_v2", "grouped matmul with count group lists"),
    "mindspeed.ops.npu_rotary_position_embedding.npu_rotary_position_embedding": (
        "npu_rotary_position_embedding", "fused rotary position embedding"),
    "mindspeed.ops.npu_moe_token_permute.npu_moe_token_permute": ("npu_moe_token_permute", "MoE token permute"),
    "mindspeed.ops.npu_moe_token_unpermute.npu_moe_token_unpermute": (
        "npu_moe_token_unpermute", "MoE token unpermute"),
    "mindspeed.ops.npu_ring_attention_update.npu_ring_attention_update": (
        "npu_ring_attention_update", "ring attention's update (--use-fused-ring-attention-update, PyTorch path)"),
}

_COC_CLASS = "mindspeed.ops.lcal_functional.CoCOperations"
_COC_METHODS = ("matmul_all_reduce", "all_gather_matmul", "all_gather_matmul_v2", "matmul_reduce_scatter",
                "pure_matmul")


def register(registry: Any, args: Any) -> None:
    """Register MindSpeed's op entry points (and the CoC methods with ``--use-ascend-coc``).

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags; ``use_ascend_coc`` turns the CoC patches on.
    """
    # Replacements are lazy "module:attr" references: mindspeed_ms.ops imports MindSpore, which
    # listing and static verification must not need; they are imported when the patch is installed.
    for target, (op, what) in _OPS.items():
        registry.register(target, f"{_OPS_MODULE}:{op}", requires=_MINDSPEED,
                          purpose=f"MindSpeed's {what} {_BUILDER}")
    registry.register(
        "mindspeed.ops.fusion_attention_v2.npu_fusion_attention",
        "mindspeed_ms.compat.torch_npu:npu_fusion_attention",
        requires=_MINDSPEED, purpose=f"MindSpeed's flash attention (v2) {_BUILDER}")
    _register_cpu(registry)
    if getattr(args, "use_ascend_coc", False):
        for method in _COC_METHODS:
            registry.register(
                f"{_COC_CLASS}.{method}", f"{_OPS_MODULE}:{method}", requires=_MINDSPEED,
                purpose=f"--use-ascend-coc: CoCOperations.{method} calls LCAL kernels through a torch_npu op "
                        f"builder; use the MindSpore matmul + collective")


#: MindSpeed's own MindSpore versions of its fused ops that call MindSpore kernels the CPU backend lacks
_MINDSPORE_OPS_ON_CPU = {
    "mindspeed.mindspore.ops.gmm.npu_gmm": "npu_gmm",
    "mindspeed.mindspore.ops.gmm.npu_gmm_v2": "npu_gmm_v2",
}


def _register_cpu(registry: Any) -> None:
    """On the CPU backend: MindSpeed's MindSpore-mode grouped matmul (``--moe-grouped-gemm``: its
    ``grouped_gemm_util.Ops.gmm`` imports ``mindspeed.mindspore.ops.gmm.npu_gmm`` when called) runs MindSpore's Gmm
    kernel, which has no CPU implementation; :mod:`mindspeed_ms.ops`' composite instead."""
    from mindspeed_ms.device import device_target

    if device_target() != "CPU":
        return
    registry.register(
        "mindspeed.mindspore.ops.npu_ring_attention_update._RingAttentionProxy.npu_ring_attention_update",
        "mindspeed_ms.compat.torch_npu:ring_attention_update_method", requires=_MINDSPEED,
        purpose="MindSpeed's MindSpore ring-attention update (--use-fused-ring-attention-update, context parallel) "
                "calls MindSpore's RingAttentionUpdate kernel, which the CPU backend lacks; the composite")
    for proxy in ("_GmmProxy", "_GmmProxy2"):
        registry.register(
            f"mindspeed.mindspore.ops.gmm.{proxy}.npu_gmm", "mindspeed_ms.compat.torch_npu:gmm_proxy_method",
            requires=_MINDSPEED,
            purpose="MindSpeed's MindSpore GMM op-builder proxy (--moe-fb-overlap's experts: GMMFunction.builder.load()"
                    ".npu_gmm) calls MindSpore's Gmm kernel, which the CPU backend lacks; the composite")
    for target, op in _MINDSPORE_OPS_ON_CPU.items():
        registry.register(target, f"{_OPS_MODULE}:{op}", requires=_MINDSPEED,
                          purpose=f"MindSpeed's MindSpore {op} (--moe-grouped-gemm) calls MindSpore's Gmm kernel, "
                                  f"which the CPU backend lacks; the composite (one matmul per group)")
