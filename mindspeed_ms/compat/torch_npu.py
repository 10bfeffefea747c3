"""Adapters from torch_npu's and MindSpeed's fused-op signatures to :mod:`mindspeed_ms.ops`.

``torch_npu.npu_fusion_attention`` and MindSpeed's ``mindspeed.ops.fusion_attention_v2.npu_fusion_attention``
accept ``drop_mask``, ``pse_type``, ``q_start_idx`` and ``kv_start_idx`` besides what
:func:`mindspeed_ms.ops.npu_fusion_attention` takes. The adapter accepts every call the originals
accept, forwards the common arguments, and rejects the extra ones when they ask for something the
MindSpore op does not do (instead of silently ignoring them).
"""

from __future__ import annotations

from typing import Any

__all__ = ["npu_fusion_attention", "npu_rotary_mul", "npu_matmul_add_fp32", "ring_attention_update_method",
           "gmm_proxy_method",
           "npu_fusion_attention_grad", "NO_LIMIT"]

#: torch_npu's "no limit" for the pre/next token band.
NO_LIMIT = 2147483647


def npu_fusion_attention(query: Any, key: Any, value: Any, head_num: int, input_layout: str, *,
                         pse: Any = None, padding_mask: Any = None, atten_mask: Any = None, scale: float = 1.0,
                         keep_prob: float = 1.0, pre_tockens: int = NO_LIMIT, next_tockens: int = NO_LIMIT,
                         inner_precise: int = 0, drop_mask: Any = None, prefix: Any = None,
                         actual_seq_qlen: Any = None, actual_seq_kvlen: Any = None, sparse_mode: int = 0,
                         gen_mask_parallel: bool = True, sync: bool = False, pse_type: int = 1,
                         q_start_idx: Any = None, kv_start_idx: Any = None, pre_tokens: int | None = None,
                         next_tokens: int | None = None) -> Any:
    """Run :func:`mindspeed_ms.ops.npu_fusion_attention` with torch_npu's / MindSpeed v2's full signature.

    Args:
        query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob,
        pre_tockens, next_tockens, inner_precise, prefix, actual_seq_qlen, actual_seq_kvlen,
        sparse_mode, gen_mask_parallel, sync, pre_tokens, next_tokens: as for
            :func:`mindspeed_ms.ops.npu_fusion_attention`.
        drop_mask: a precomputed dropout mask; only ``None`` is supported.
        pse_type: how ``pse`` is applied; only the default ``1`` is supported when ``pse`` is given.
        q_start_idx, kv_start_idx: ALiBi start positions; only ``None`` is supported.

    Returns:
        What :func:`mindspeed_ms.ops.npu_fusion_attention` returns.

    Raises:
        OpArgumentError: one of the torch_npu-only arguments asks for unsupported behaviour.
    """
    from mindspeed_ms.ops import OpArgumentError
    from mindspeed_ms.ops import npu_fusion_attention as fusion_attention

    op = "npu_fusion_attention"
    if drop_mask is not None:
        raise OpArgumentError(op, "drop_mask", "a precomputed dropout mask is not supported; pass keep_prob")
    if pse is not None and pse_type != 1:
        raise OpArgumentError(op, "pse_type", f"only pse_type=1 is supported with a pse tensor, got {pse_type}")
    for argument, given in (("q_start_idx", q_start_idx), ("kv_start_idx", kv_start_idx)):
        if given is not None:
            raise OpArgumentError(op, argument, "ALiBi start positions are not supported; pass None")
    return fusion_attention(
        query, key, value, head_num, input_layout, pse=pse, padding_mask=padding_mask, atten_mask=atten_mask,
        scale=scale, keep_prob=keep_prob, pre_tockens=pre_tockens, next_tockens=next_tockens,
        inner_precise=inner_precise, prefix=prefix, actual_seq_qlen=actual_seq_qlen,
        actual_seq_kvlen=actual_seq_kvlen, sparse_mode=sparse_mode, gen_mask_parallel=gen_mask_parallel,
        sync=sync, pre_tokens=pre_tokens, next_tokens=next_tokens)


def npu_rotary_mul(x: Any, cos: Any, sin: Any, rotary_mode: str = "half") -> Any:
    """``torch_npu.npu_rotary_mul(x, cos, sin)``: rotate-half RoPE, ``x * cos + rotate_half(x) * sin``.

    MindSpeed-LLM's legacy ``apply_rotary_pos_emb`` calls it under ``--use-fused-rotary-pos-emb``; MSAdapter's calls
    MindSpore's fused RotaryPositionEmbedding kernel, which the CPU backend lacks. ``rotary_mode="interleave"`` is
    mode 1 of :func:`mindspeed_ms.ops.npu_rotary_position_embedding`. The parameters are named as MSAdapter's
    ``npu_rotary_mul(x, cos, sin, rotary_mode)`` names them (``mindspeed-ms verify --static`` compares them).

    Raises:
        OpArgumentError: an unknown ``rotary_mode`` (a ``ValueError``), or what the op raises.
    """
    from mindspeed_ms.ops import OpArgumentError, npu_rotary_position_embedding

    modes = {"half": 0, "interleave": 1}
    if rotary_mode not in modes:
        raise OpArgumentError("npu_rotary_mul", "rotary_mode", f"expected 'half' or 'interleave', got {rotary_mode!r}")
    return npu_rotary_position_embedding(x, cos, sin, modes[rotary_mode])


def npu_matmul_add_fp32(x: Any, weight: Any, C: Any) -> Any:  # noqa: N803  (torch_npu's name)
    """``torch_npu.npu_matmul_add_fp32(x, weight, C)``: ``C += x^T @ weight`` in float32, in place (an ATB kernel).

    MindSpeed's MindSpore gradient-accumulation fusion (megatron's ``wgrad_gemm_accum_fp32`` when a script leaves
    ``--gradient-accumulation-fusion`` on, as the mixtral one does) calls it with ``(grad_output, total_input,
    main_grad)``; MSAdapter's loads an ATB op builder, which the CPU backend cannot. This is
    :func:`mindspeed_ms.ops.npu_matmul_add_fp32` with MindSpeed's argument order.
    """
    from mindspeed_ms.ops import npu_matmul_add_fp32 as matmul_add

    return matmul_add(weight, x, C)


def gmm_proxy_method(self: Any, x: Any, weight: Any, bias: Any = None, group_list: Any = None, group_type: int = 0,
                     group_list_type: int = 0) -> Any:
    """``_GmmProxy.npu_gmm`` (what MindSpeed's MindSpore op builder loads for ``GMMFunction.builder.load()``; its
    ``--moe-fb-overlap`` experts call it for the grouped matmuls and their weight gradients):
    :func:`mindspeed_ms.ops.gmm.grouped_matmul_lists` (MindSpore's Gmm kernel has no CPU implementation)."""
    del self
    from mindspeed_ms.ops.gmm import grouped_matmul_lists

    return grouped_matmul_lists(x, weight, bias, group_list, group_type, group_list_type)


def ring_attention_update_method(self: Any, *args: Any, **kwargs: Any) -> Any:
    """``_RingAttentionProxy.npu_ring_attention_update`` (what MindSpeed's MindSpore op builder loads for
    ``--use-fused-ring-attention-update``): :func:`mindspeed_ms.ops.npu_ring_attention_update` (MindSpore's
    RingAttentionUpdate kernel is Ascend-only)."""
    del self
    from mindspeed_ms.ops import npu_ring_attention_update

    return npu_ring_attention_update(*args, **kwargs)


def npu_fusion_attention_grad(query: Any, key: Any, value: Any, dy: Any, head_num: int, input_layout: str, *,
                              pse: Any = None, padding_mask: Any = None, atten_mask: Any = None,
                              drop_mask: Any = None, softmax_max: Any = None, softmax_sum: Any = None,
                              softmax_in: Any = None, attention_in: Any = None, prefix: Any = None,
                              actual_seq_qlen: Any = None, actual_seq_kvlen: Any = None, keep_prob: float = 1.0,
                              scale_value: float = 1.0, pre_tockens: int = NO_LIMIT, next_tockens: int = NO_LIMIT,
                              inner_precise: int = 0, sparse_mode: int = 0, gen_mask_parallel: bool = True,
                              sync: bool = False, pse_type: int = 1, q_start_idx: Any = None,
                              kv_start_idx: Any = None, seed: int = 1234, offset: int = 0, numels: int = 0) -> Any:
    """``torch_npu.npu_fusion_attention_grad`` (MSAdapter's signature): flash attention's explicit backward from the
    saved softmax statistics, which MindSpeed's ring-attention context parallelism calls once per ring step with the
    merged statistics and output. :func:`mindspeed_ms.ops.npu_fusion_attention_grad` (MSAdapter's calls
    FlashAttentionScoreGrad, which has no CPU kernel).

    Returns:
        ``(dq, dk, dv, dpse)`` as torch_npu's kernel returns them (MSAdapter's drops ``dpse``).

    Raises:
        OpArgumentError: ``drop_mask``, ALiBi start positions or another ``pse_type`` (what the forward adapter
            refuses too), or what the op raises.
        OpUnavailableError: ``keep_prob < 1`` (the dropout mask cannot be regenerated from ``seed``/``offset``).
    """
    from mindspeed_ms.ops import OpArgumentError
    from mindspeed_ms.ops import npu_fusion_attention_grad as fusion_attention_grad

    del gen_mask_parallel, sync, seed, offset, numels  # the dropout mask's generator state: keep_prob 1 only
    op = "npu_fusion_attention_grad"
    if drop_mask is not None:
        raise OpArgumentError(op, "drop_mask", "a precomputed dropout mask is not supported")
    if pse is not None and pse_type != 1:
        raise OpArgumentError(op, "pse_type", f"only pse_type=1 is supported with a pse tensor, got {pse_type}")
    for argument, given in (("q_start_idx", q_start_idx), ("kv_start_idx", kv_start_idx)):
        if given is not None:
            raise OpArgumentError(op, argument, "ALiBi start positions are not supported; pass None")
    return fusion_attention_grad(
        query, key, value, dy, head_num, input_layout, pse=pse, padding_mask=padding_mask, atten_mask=atten_mask,
        softmax_max=softmax_max, softmax_sum=softmax_sum, softmax_in=softmax_in, attention_in=attention_in,
        scale_value=scale_value, keep_prob=keep_prob, pre_tockens=pre_tockens, next_tockens=next_tockens,
        inner_precise=inner_precise, prefix=prefix, actual_seq_qlen=actual_seq_qlen,
        actual_seq_kvlen=actual_seq_kvlen, sparse_mode=sparse_mode)
