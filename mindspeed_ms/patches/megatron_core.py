"""Built-in provider: megatron-core code that relies on PyTorch semantics MindSpore lacks.

On MindSpore's CPU backend it also carries what Megatron's training machinery (DDP and its grad
buffers, the distributed optimizer, the pipeline schedules, sequence and expert parallelism) needs
from MSAdapter and finds missing there: collectives without a CPU kernel, tensor methods that
leave autograd or allocate on the Ascend device (see :mod:`mindspeed_ms.compat.megatron_parallel`
and :mod:`mindspeed_ms.compat.cpu_collectives`).
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MEGATRON_CORE_REQUIREMENT, MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

name = "megatron_core"
requires = (MEGATRON_CORE_REQUIREMENT,)

_MEGATRON = (MEGATRON_CORE_REQUIREMENT,)
_MINDSPORE = (MINDSPORE_REQUIREMENT,)
_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_BUCKET_GROUP = "megatron.core.distributed.param_and_grad_buffer._ParamAndGradBucketGroup"
_TORCH_NORM = "megatron.core.transformer.torch_norm.WrappedTorchNorm.__new__"
TORCH_NORM_PURPOSE = ("without Apex the local layer spec uses WrappedTorchNorm, which refuses sequence parallel; "
                      "mark the norm's parameters sequence_parallel so finalize_model_grads sums their gradients "
                      "over the tensor-parallel group, as Apex's FusedLayerNorm does")
_CROSS_ENTROPY = "megatron.core.tensor_parallel.cross_entropy.VocabParallelCrossEntropy"


def register(registry: Any, args: Any) -> None:
    """Register the megatron-core patches for the device MindSpore computes on.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.device import device_target

    if device_target() == "CPU":
        from mindspeed_ms.compat import megatron_core as compat

        registry.register(
            f"{_CROSS_ENTROPY}.calculate_gradients", compat.calculate_gradients, requires=_MEGATRON,
            purpose="vocab-parallel cross entropy writes the target term into a view of the softmax; on CPU "
                    "the write does not reach the base, so the gradient silently lost it")
        registry.register(
            f"{_CROSS_ENTROPY}.calculate_predicted_logits", compat.calculate_predicted_logits, requires=_MEGATRON,
            purpose="each token's logit is picked with an advanced index (on MSAdapter's CPU path 7 kernels: an arange "
                    "and the wrapping of negative indices around GatherNd) and zeroed outside the partition with "
                    "index assignments (a Select and a copy); gather and masked_fill give the same values in 2")
        registry.register(
            f"{_CROSS_ENTROPY}.prepare_gradient_calculation_operands", compat.prepare_gradient_calculation_operands,
            requires=_MEGATRON,
            purpose="the backward's row numbers and per-token 1.0/0.0 update (an arange, a cast and a subtraction: "
                    "three CPU kernels each step) written on the host, the same values")
        registry.register(
            "megatron.core.transformer.utils.attention_mask_func", compat.attention_mask_func, requires=_MEGATRON,
            purpose="the causal mask is applied with masked_fill_ on a view of the attention scores, which autograd "
                    "records: MindSpore's CPU backend cannot write through it (the mask was silently dropped: "
                    "every token saw the future); applied out of place instead")
        _register_parallel(registry)
        _register_speed(registry)
        _register_tp_one(registry)
        from mindspeed_ms.compat import tensor_type

        for target in tensor_type.MEGATRON_TYPE_CHECKS:
            registry.register(target, tensor_type.cuda_type_names_wrapper, kind="wrap", requires=_MEGATRON,
                              purpose=tensor_type.MEGATRON_TYPE_CHECKS_PURPOSE)


def _register_parallel(registry: Any) -> None:
    """Register the CPU fixes of Megatron's training machinery (DDP, optimizers, schedules, MoE)."""
    from mindspeed_ms.compat import megatron_parallel as parallel

    registry.register(
        "mindspore.common.tensor.Tensor.clone", parallel.clone, requires=_MINDSPORE,
        purpose="Tensor.clone on CPU copies through NumPy: the copy leaves the autograd graph, and a 0-d tensor "
                "raises 'Expected a NumPy array' (Megatron's training loop clones the loss it reports)")
    registry.register(
        f"{_BUCKET_GROUP}.start_grad_sync", parallel.start_grad_sync, requires=_MEGATRON,
        purpose="DDP's gradient reduction: _coalescing_manager is missing under MSAdapter, '*=' on the bucket view "
                "rebinds it instead of scaling the buffer, a collective on a view does not reach the buffer and "
                "reduce-scatter has no CPU kernel; all-reduce each bucket on an owned tensor, write back")
    registry.register(
        f"{_BUCKET_GROUP}.start_param_sync", parallel.start_param_sync, requires=_MEGATRON,
        purpose="the distributed optimizer's parameter all-gather uses all_gather_into_tensor (no CPU kernel) "
                "inside _coalescing_manager into a view of the parameter buffer; gather a list, write back")
    registry.register(
        "megatron.core.optimizer.distrib_optimizer.quantize_param_shard", parallel.quantize_param_shard,
        requires=_MEGATRON,
        purpose="without Transformer Engine megatron's FP8 fallback raises even with no FP8 parameter, so every "
                "distributed-optimizer step failed; a no-op when there is nothing to quantize")
    for method in ("cuda", "npu"):
        registry.register(
            f"mindspore.common.tensor.Tensor.{method}", parallel.cuda, requires=_MINDSPORE,
            purpose=f"Tensor.{method}() moves to 'Ascend', which raises on a CPU build (megatron's pipeline "
                    f"schedule: torch.tensor(0).cuda()); on CPU the tensor already is where it computes")
    registry.register(
        "megatron.core.pipeline_parallel.p2p_communication._batched_p2p_ops", parallel.batched_p2p_ops,
        requires=_MEGATRON,
        purpose="the pipeline's p2p exchange uses batch_isend_irecv (no CPU kernel); blocking send/recv in an order "
                "that cannot deadlock")
    from mindspeed_ms.compat import cpu_collectives

    for name, replacement in (("all_gather_into_tensor", cpu_collectives.all_gather_into_tensor),
                              ("_all_gather_base", cpu_collectives.all_gather_into_tensor),
                              ("reduce_scatter_tensor", cpu_collectives.reduce_scatter_tensor),
                              ("_reduce_scatter_base", cpu_collectives.reduce_scatter_tensor),
                              ("all_to_all_single", cpu_collectives.all_to_all_single),
                              ("reduce_scatter", cpu_collectives.reduce_scatter)):
        registry.register(
            f"msadapter.distributed.distributed_c10d.{name}", replacement, requires=_MSADAPTER,
            purpose=f"torch.distributed.{name} has no CPU kernel (megatron's sequence parallel, distributed optimizer "
                    f"and MoE alltoall dispatcher call it); built from all_gather/all_reduce with the same result")
    registry.register(
        "msadapter.distributed.distributed_c10d.all_gather", cpu_collectives.all_gather_wrapper, kind="wrap",
        requires=_MSADAPTER,
        purpose="the list all_gather writes nothing into output views and fails on unequal sizes on CPU (megatron "
                "gathers into views of one tensor; the MoE dispatcher's unequal split with tp x ep); gather padded "
                "owned buffers, copy into the caller's tensors")
    for name in ("all_gather_object", "gather_object", "broadcast_object_list"):
        registry.register(
            f"msadapter.distributed.distributed_c10d.{name}", getattr(cpu_collectives, name), requires=_MSADAPTER,
            purpose=f"{name} gathers sizes into views of one tensor, which a collective does not write through on "
                    f"CPU ('Memcpy failed'); megatron's dist_checkpointing exchanges its metadata with it")
    registry.register(
        "mindspore.common.tensor.Tensor.scatter", parallel.scatter_value_wrapper, kind="wrap", requires=_MINDSPORE,
        purpose="Tensor.scatter with a scalar value has no CPU kernel for any dtype (ScatterValue); megatron's MoE "
                "router builds its top-k map that way; the scalar becomes a tensor source")
    registry.register(
        "megatron.core.transformer.moe.moe_utils.unpermute", parallel.unpermute, requires=_MEGATRON,
        purpose="MoE unpermute sums expert outputs with scatter_add_ (no CPU kernel; index_add ignores its "
                "indices on CPU); the same sums as a product with the 0/1 token-selection matrix")
    registry.register(
        "megatron.core.transformer.moe.token_dispatcher.MoEAlltoAllTokenDispatcher._maybe_dtoh_and_synchronize",
        parallel.dtoh_without_streams, requires=_MEGATRON,
        purpose="the alltoall dispatcher compares torch.cuda.current_stream() with a torch.cuda.Stream() that is "
                "None on CPU (TypeError) and copies split sizes on that side stream; copy them synchronously")
    registry.register(
        "msadapter.ops.creation.empty_like", parallel.empty_like_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.empty_like allocates on the input's device, which MSAdapter reports as Ascend on CPU "
                "('Create device context failed'; megatron's unequal-split reduce-scatter)")
    registry.register(
        "mindspore.common.tensor.Tensor.new_empty", parallel.new_empty, requires=_MINDSPORE,
        purpose="Tensor.new_empty rejects a list size and allocates on an accelerator on CPU (megatron's unequal "
                "all-to-all allocates new_empty(size=[...], device=torch.cuda.current_device()))")
    registry.register(
        _TORCH_NORM, parallel.wrapped_torch_norm_new, requires=_MEGATRON, purpose=TORCH_NORM_PURPOSE)


def _register_tp_one(registry: Any) -> None:
    """Register the tensor-parallel region mappings that skip their identity Function at tensor-parallel size 1."""
    from mindspeed_ms.compat import tp_one_mappings

    for mapping in tp_one_mappings.MAPPINGS:
        registry.register(
            f"megatron.core.tensor_parallel.mappings.{mapping}", tp_one_mappings.identity_at_tp_one_wrapper,
            kind="wrap", requires=_MEGATRON,
            purpose="at tensor-parallel size 1 the mapping's autograd Function is the identity both ways (megatron's "
                    "own world-size test); skip its apply (~40 us on the CPU backend, 10 a step of the example) and "
                    "return the input")


def _register_speed(registry: Any) -> None:
    """Register the CPU step-time fixes: no unasked zero count, gradient norm and clipping per DDP bucket."""
    from mindspeed_ms.compat import megatron_speed as speed

    registry.register(
        "megatron.core.optimizer.optimizer.ChainedOptimizer.step", speed.chained_optimizer_step, requires=_MEGATRON,
        purpose="ChainedOptimizer.step counts the zeros of every gradient even with log_num_zeros_in_grad off and "
                "throws the count away (about half the step on CPU); count only when asked, else None as "
                "FP32Optimizer.step returns")
    registry.register(
        "megatron.core.optimizer.optimizer.MegatronOptimizer.get_main_grads_for_grad_norm",
        speed.get_main_grads_for_grad_norm, requires=_MEGATRON,
        purpose="the grad norm launches a norm per gradient; gradients that exactly tile a DDP bucket are handed "
                "over as the bucket's grad_data: one norm per bucket")
    registry.register(
        "megatron.core.optimizer.clip_grads.clip_grad_by_total_norm_fp32", speed.clip_grad_by_total_norm_fp32,
        requires=_MEGATRON,
        purpose="clipping copies a scaled gradient per parameter into views of DDP's buffer (a write-back through "
                "each view on CPU); a bucket's gradients are scaled in one pass over its memory")
    from mindspeed_ms.compat import megatron_timers as timers

    for method, replacement in (("_get_elapsed_time_all_ranks", timers.get_elapsed_time_all_ranks),
                                ("_get_global_min_max_time", timers.get_global_min_max_time),
                                ("_get_all_ranks_time_string", timers.get_all_ranks_time_string)):
        registry.register(
            f"megatron.core.timers.Timers.{method}", replacement, requires=_MEGATRON,
            purpose="megatron's timer report (training_log, every --log-interval) writes, compares, filters with a "
                    "boolean index and reads with .item() each timer's time one tensor operation at a time: ~15 "
                    "ms an iteration in MindSpore's CPU kernels at --log-interval 1; the gathered times read into "
                    "NumPy once, the same report")
