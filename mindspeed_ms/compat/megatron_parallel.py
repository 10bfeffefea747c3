"""Replacements for megatron-core's parallel training machinery on MindSpore's CPU backend.

Megatron's DistributedDataParallel keeps every gradient in views of one flat buffer per dtype
(``param.main_grad``, ``bucket.grad_data``) and, with the distributed optimizer, every parameter in
views of a flat parameter buffer. On the CPU backend a collective or an augmented assignment on
such a view does not reach the buffer, and reduce-scatter, ``all_gather_into_tensor``,
``batch_isend_irecv`` and ``all_to_all_single`` have no CPU kernel. The functions here run the same
communication on tensors that own their memory and write the results back through the views
(``copy_`` writes through views once the ``msadapter_cpu`` provider is applied).
"""

from __future__ import annotations

from typing import Any

__all__ = ["batched_p2p_ops", "clone", "cuda", "quantize_param_shard", "start_grad_sync", "start_param_sync",
           "wrapped_torch_norm_new"]


def clone(self: Any, *, memory_format: Any = None) -> Any:
    """Return a copy of ``self`` that autograd records (``Tensor.clone``).

    MSAdapter's ``clone`` calls MindSpore's ``Tensor.copy``, which on the CPU divides by 1.0 through
    NumPy: the copy is cut from the autograd graph, and a 0-dimensional tensor raises ``TypeError:
    Expected a NumPy array`` (a loss cloned for reporting, as Megatron's training scripts do).
    """
    del memory_format  # MindSpore tensors are always contiguous
    from mindspore import ops

    return ops.deepcopy(self)


def _owned_all_reduce(view: Any, group: Any, scale: float = 1.0, average: bool = False) -> None:
    """All-reduce (sum) ``view`` over ``group`` on a tensor that owns its memory, and write it back."""
    import torch

    owned = view * scale if scale != 1.0 else clone(view)
    size = torch.distributed.get_world_size(group=group)
    if size > 1:
        torch.distributed.all_reduce(owned, op=torch.distributed.ReduceOp.SUM, group=group)
        if average:
            owned = owned / size
    view.copy_(owned)


def _owned_all_gather(buffer: Any, group: Any, rank: int, size: int) -> None:
    """Gather every rank's shard of the flat ``buffer`` (a view) into all of it, through owned tensors."""
    import torch

    if size == 1:
        return
    shard = buffer.numel() // size
    local = clone(buffer[rank * shard:(rank + 1) * shard])
    parts = [torch.zeros_like(local) for _ in range(size)]
    torch.distributed.all_gather(parts, local, group=group)
    buffer.copy_(torch.cat(parts))


def start_grad_sync(self: Any) -> None:
    """Reduce every bucket's gradients over the data-parallel group, synchronously.

    Replaces ``_ParamAndGradBucketGroup.start_grad_sync``. Megatron scales ``bucket.grad_data`` with
    ``*=`` and all-reduces (or, with the distributed optimizer, reduce-scatters) it inside
    ``_coalescing_manager``. On MindSpore's CPU backend the coalescing manager does not exist
    (``ProcessGroup.allreduce_coalesced``), ``*=`` on the bucket view rebinds the attribute to a new
    tensor instead of scaling the buffer, a collective on a view does not reach the buffer, and
    reduce-scatter has no kernel. Here each bucket is scaled and all-reduced on a tensor that owns its
    memory and written back through the view; with the distributed optimizer the whole bucket is
    all-reduced, so this rank's shard holds exactly what the reduce-scatter would have put there (the
    optimizer reads only its shard).
    """
    if self.grad_reduce_handle is not None:
        raise RuntimeError("start_grad_sync: a gradient reduction is already outstanding for this bucket group")
    if self.ddp_config.check_for_nan_in_grad or self.ddp_config.check_for_large_grads:
        self.check_grads(check_for_nan_or_inf=self.ddp_config.check_for_nan_in_grad,
                         check_for_large=self.ddp_config.check_for_large_grads)
    if self.ddp_config.num_distributed_optimizer_instances > 1:
        raise NotImplementedError("start_grad_sync on the CPU backend: num_distributed_optimizer_instances > 1 "
                                  "is not supported")
    if self.ddp_config.use_distributed_optimizer:
        group = self.intra_distributed_optimizer_instance_group
    else:
        group = self.data_parallel_group
    for bucket in self.buckets:
        _owned_all_reduce(bucket.grad_data, group, float(bucket.gradient_scaling_factor),
                          average=bool(self.ddp_config.average_in_collective))
    self.grad_reduce_handle = None


def start_param_sync(self: Any, force_sync: bool = False) -> None:
    """All-gather the updated parameter shards of every bucket (distributed optimizer), synchronously.

    Replaces ``_ParamAndGradBucketGroup.start_param_sync``, which calls ``all_gather_into_tensor``
    (no CPU kernel) inside ``_coalescing_manager`` (absent under MSAdapter) into a view of the
    parameter buffer. Here the shards are gathered with the list form of ``all_gather`` and written
    back through the view.
    """
    if not self.ddp_config.use_distributed_optimizer:
        raise RuntimeError("start_param_sync is only used with the distributed optimizer")
    if force_sync and self.param_gather_handle is not None:
        self.param_gather_handle = None
        return
    if not force_sync and self.param_gather_handle is not None:
        raise RuntimeError("start_param_sync: a parameter all-gather is already outstanding for this bucket group")
    for bucket in self.buckets:
        _owned_all_gather(bucket.param_data, self.intra_distributed_optimizer_instance_group,
                          self.intra_distributed_optimizer_instance_rank,
                          self.intra_distributed_optimizer_instance_size)
    self.param_gather_handle = None
    self.param_gather_dispatched = True


def quantize_param_shard(model_params: Any, main_params: Any, start_offsets: Any, data_parallel_group: Any,
                         fsdp_shard_model_params: Any = None) -> None:
    """Do nothing when there is no FP8 parameter (``megatron.core.fp8_utils.quantize_param_shard``).

    Without Transformer Engine, megatron-core's fallback raises "Invalid Transformer Engine version for
    FP8 distributed optimizer" even when the list of FP8 parameters is empty, so the distributed
    optimizer's step always fails; FP8 parameters still raise.
    """
    del main_params, start_offsets, data_parallel_group, fsdp_shard_model_params
    if len(model_params):
        raise NotImplementedError("FP8 parameters need Transformer Engine, which this backend does not have")


def cuda(self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """Return ``self``: on MindSpore's CPU backend the accelerator is the CPU (``Tensor.cuda``/``Tensor.npu``).

    MSAdapter moves the tensor to ``"Ascend"``, which raises on a CPU build; megatron's pipeline schedule
    calls ``torch.tensor(0).cuda()`` for its token count.
    """
    del device, non_blocking, kwargs
    return self


def batched_p2p_ops(*, tensor_send_prev: Any, tensor_recv_prev: Any, tensor_send_next: Any, tensor_recv_next: Any,
                    group: Any, prev_pipeline_rank: int, next_pipeline_rank: int) -> list[Any]:
    """Exchange activations/gradients with the neighbouring pipeline stages with blocking send/recv.

    Replaces ``p2p_communication._batched_p2p_ops``, whose ``batch_isend_irecv`` has no CPU kernel
    (``DistCommBatchIsendIrecv``). The order cannot deadlock: even pipeline ranks send to the next
    stage before they receive from the previous one, odd ranks the other way round (megatron's own
    ``_p2p_ops`` order). The receive buffers are fresh tensors, so the received data lands in them.

    Returns:
        An empty list: every transfer has completed.
    """
    import torch
    from megatron.core.parallel_state import get_pipeline_model_parallel_rank

    def send(tensor: Any, peer: int) -> None:
        if tensor is not None:
            torch.distributed.send(tensor.contiguous(), peer, group=group)

    def recv(tensor: Any, peer: int) -> None:
        if tensor is not None:
            torch.distributed.recv(tensor, peer, group=group)

    if get_pipeline_model_parallel_rank() % 2 == 0:
        send(tensor_send_next, next_pipeline_rank)
        recv(tensor_recv_prev, prev_pipeline_rank)
        send(tensor_send_prev, prev_pipeline_rank)
        recv(tensor_recv_next, next_pipeline_rank)
    else:
        recv(tensor_recv_prev, prev_pipeline_rank)
        send(tensor_send_next, next_pipeline_rank)
        recv(tensor_recv_next, next_pipeline_rank)
        send(tensor_send_prev, prev_pipeline_rank)
    return []


def wrapped_torch_norm_new(cls: Any, config: Any, hidden_size: int, eps: float = 1e-5,
                           persist_layer_norm: bool = False, zero_centered_gamma: bool = False,
                           normalization: str = "LayerNorm") -> Any:
    """Build PyTorch's LayerNorm/RMSNorm for megatron's local layer spec, sequence parallel allowed.

    Replaces ``WrappedTorchNorm.__new__``, which refuses ``sequence_parallel`` (the local spec falls
    back to it when Apex is absent, as on MindSpore and on CPU PyTorch). Under sequence parallelism
    each tensor-parallel rank normalises its own part of the sequence, so the norm's weight
    gradients must be summed over the tensor-parallel group; marking the parameters
    ``sequence_parallel`` makes ``finalize_model_grads`` do that, exactly as Apex's
    ``FusedLayerNorm`` marks its own.
    """
    del cls, persist_layer_norm, zero_centered_gamma, normalization  # megatron reads them from config
    import torch

    if config.layernorm_zero_centered_gamma or config.persist_layer_norm or config.memory_efficient_layer_norm:
        raise ValueError("zero-centered gamma, persist_layer_norm and memory_efficient_layer_norm need Apex or "
                         "Transformer Engine; PyTorch's LayerNorm supports none of them")
    if config.normalization == "LayerNorm":
        norm = torch.nn.LayerNorm(normalized_shape=hidden_size, eps=eps)
    elif config.normalization == "RMSNorm":
        norm = torch.nn.RMSNorm(normalized_shape=hidden_size, eps=eps)
    else:
        raise ValueError(f"normalization {config.normalization!r}: only LayerNorm and RMSNorm are supported")
    for param in norm.parameters():
        param.sequence_parallel = bool(config.sequence_parallel)
    return norm
