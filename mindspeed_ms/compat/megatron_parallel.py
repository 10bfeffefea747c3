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

from mindspeed_ms.compat.cpu_collectives import CompletedWork
from mindspeed_ms.compat.errors import BucketSyncError
from mindspeed_ms.compat.megatron_speed import remember_buckets

__all__ = ["batched_p2p_ops", "clone", "cuda", "dtoh_without_streams", "empty_like_wrapper", "new_empty",
           "quantize_param_shard", "scatter_value_wrapper", "start_grad_sync", "start_param_sync",
           "unpermute", "wrapped_torch_norm_new", "BucketSyncError"]


def clone(self: Any, *, memory_format: Any = None) -> Any:
    """Return a copy of ``self`` that autograd records (``Tensor.clone``).

    MSAdapter's ``clone`` calls MindSpore's ``Tensor.copy``, which on the CPU divides by 1.0 through
    NumPy: the copy is cut from the autograd graph, and a 0-dimensional tensor raises ``TypeError:
    Expected a NumPy array`` (a loss cloned for reporting, as Megatron's training scripts do).
    """
    del memory_format  # MindSpore tensors are always contiguous
    import mindspore
    import mindspore.ops as ops

    if getattr(self, "_dtype", None) is mindspore.bfloat16:
        # Identity (deepcopy) has no bfloat16 CPU kernel (--bf16 --use-distributed-optimizer's parameter all-gather
        # stopped): a float32 round trip, exact (every bfloat16 value is a float32 one) and recorded by autograd
        return ops.cast(ops.cast(self, mindspore.float32), mindspore.bfloat16)
    from mindspeed_ms.compat.fast_contiguous import host_clone

    copied = host_clone(self)  # a contiguous float32 tensor on MindSpore's CPU: copied on the host
    return ops.deepcopy(self) if copied is None else copied


def _owned_all_reduce(view: Any, group: Any, scale: float = 1.0, average: bool = False) -> None:
    """All-reduce (sum) ``view`` over ``group`` on a tensor that owns its memory, and write it back.

    With one rank in ``group`` the all-reduce is the identity: only the scaling is left, applied in the
    view's host memory (no copy, no collective, no write-back).
    """
    import torch

    from mindspeed_ms.compat.megatron_speed import host_array, scale_in_place

    size = torch.distributed.get_world_size(group=group)
    if size == 1:
        if scale != 1.0:
            scale_in_place(view, scale)
        return
    owned = view * scale if scale != 1.0 else clone(view)
    torch.distributed.all_reduce(owned, op=torch.distributed.ReduceOp.SUM, group=group)
    if average:
        owned = owned / size
    host_array(view)[...] = owned.asnumpy().reshape(-1)


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
    memory and written into the view's host memory (one pass); with a group of one rank the all-reduce
    is the identity and only megatron's scaling by ``gradient_scaling_factor`` is applied, in place. With
    the distributed optimizer the whole bucket is
    all-reduced, so this rank's shard holds exactly what the reduce-scatter would have put there (the
    optimizer reads only its shard). Synchronous; with ``overlap_grad_reduce`` it runs when the
    bucket's last gradient is ready, as in megatron, and returns an already finished handle.
    """
    if self.grad_reduce_handle is not None:
        raise BucketSyncError("start_grad_sync", "a gradient reduction is already outstanding for this bucket group")
    if self.ddp_config.check_for_nan_in_grad or self.ddp_config.check_for_large_grads:
        self.check_grads(check_for_nan_or_inf=self.ddp_config.check_for_nan_in_grad,
                         check_for_large=self.ddp_config.check_for_large_grads)
    if self.ddp_config.num_distributed_optimizer_instances > 1:
        raise BucketSyncError("start_grad_sync", "num_distributed_optimizer_instances > 1 is not supported")
    if self.ddp_config.use_distributed_optimizer:
        group = self.intra_distributed_optimizer_instance_group
    else:
        group = self.data_parallel_group
    remember_buckets(self)
    for bucket in self.buckets:
        _owned_all_reduce(bucket.grad_data, group, float(bucket.gradient_scaling_factor),
                          average=bool(self.ddp_config.average_in_collective))
    # with overlap_grad_reduce megatron waits on the handle in finish_grad_sync: hand it a finished one
    self.grad_reduce_handle = CompletedWork() if self.ddp_config.overlap_grad_reduce else None


def start_param_sync(self: Any, force_sync: bool = False) -> None:
    """All-gather the updated parameter shards of every bucket (distributed optimizer), synchronously.

    Replaces ``_ParamAndGradBucketGroup.start_param_sync``, which calls ``all_gather_into_tensor``
    (no CPU kernel) inside ``_coalescing_manager`` (absent under MSAdapter) into a view of the
    parameter buffer. Here the shards are gathered with the list form of ``all_gather`` and written
    back through the view. Synchronous; with ``overlap_param_gather`` the handle megatron waits on in
    ``finish_param_sync`` has already finished.
    """
    if not self.ddp_config.use_distributed_optimizer:
        raise BucketSyncError("start_param_sync", "it is only used with the distributed optimizer")
    if force_sync and self.param_gather_handle is not None:
        self.param_gather_handle = None
        return
    if not force_sync and self.param_gather_handle is not None:
        raise BucketSyncError("start_param_sync", "a parameter all-gather is already outstanding for this bucket group")
    for bucket in self.buckets:
        _owned_all_gather(bucket.param_data, self.intra_distributed_optimizer_instance_group,
                          self.intra_distributed_optimizer_instance_rank,
                          self.intra_distributed_optimizer_instance_size)
    is_async = self.ddp_config.overlap_param_gather and not force_sync
    self.param_gather_handle = CompletedWork() if is_async else None
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


def scatter_value_wrapper(scatter: Any) -> Any:
    """Let ``Tensor.scatter`` take a scalar value on the CPU (wrap of MSAdapter's ``scatter``).

    The CPU kernel behind a scalar ``value`` (``ScatterValue``) supports no data type; megatron's MoE
    router builds its top-k map with ``zeros.int().scatter(1, indices, 1)``. The scalar becomes a
    tensor of the index's shape and ``self``'s dtype, which the tensor-source kernel handles.
    """
    import functools

    @functools.wraps(scatter)
    def scatter_(self: Any, dim: int, index: Any, src: Any = None, *args: Any, value: Any = None,
                 **kwargs: Any) -> Any:
        import torch

        if value is not None and src is None:
            src, value = value, None
        if src is not None and not isinstance(src, torch.Tensor):
            src = torch.full(tuple(index.shape), src, dtype=self.dtype)
        if value is not None:
            kwargs["value"] = value
        return scatter(self, dim, index, src, *args, **kwargs)

    return scatter_


def unpermute(permuted_tokens: Any, sorted_indices: Any, restore_shape: Any, probs: Any = None,
              routing_map: Any = None, fused: bool = False, drop_and_pad: bool = False) -> Any:
    """Put the experts' outputs back in token order, weighted by the routing probabilities.

    Replaces ``megatron.core.transformer.moe.moe_utils.unpermute`` (its unfused path), whose final
    ``zeros.scatter_add_`` has no CPU kernel (``InplaceScatterAdd``; nor has the out-of-place
    ``ScatterAddExt``, and ``index_add`` ignores its indices on this backend). The sum over the
    copies of each token is a product with the 0/1 matrix of ``sorted_indices``: the same sums
    (each output element adds its few nonzero terms and exact zeros), with the same gradient.
    """
    import torch

    if fused:
        raise NotImplementedError("the fused unpermute needs Transformer Engine")
    _, hidden = restore_shape
    del hidden
    input_dtype = permuted_tokens.dtype
    if probs is not None:
        if routing_map is None:
            raise ValueError("unpermute: routing_map must be given with probs")
        if drop_and_pad:
            num_experts = routing_map.size(1)
            capacity = sorted_indices.size(0) // num_experts
            num_unpermuted_tokens = probs.size(0)
            probs_t_1d = probs.T.contiguous().view(-1)
            indices_dim0 = torch.arange(num_experts).unsqueeze(-1)
            indices_dim1 = sorted_indices.view(num_experts, capacity)
            indices_1d = (indices_dim0 * num_unpermuted_tokens + indices_dim1).view(-1)
            permuted_probs = probs_t_1d.index_select(0, indices_1d)
        else:
            permuted_probs = probs.T.contiguous().masked_select(routing_map.T.contiguous())
        permuted_tokens = permuted_tokens * permuted_probs.unsqueeze(-1)
    num_tokens = int(restore_shape[0])
    positions = torch.arange(num_tokens, dtype=sorted_indices.dtype).unsqueeze(1)
    selection = (positions == sorted_indices.unsqueeze(0)).to(permuted_tokens.dtype)  # [tokens, permuted]
    return torch.matmul(selection, permuted_tokens).to(dtype=input_dtype)


def _to_host(tensor: Any, as_numpy: bool = False) -> Any:
    import torch

    if not torch.is_tensor(tensor):
        return tensor
    tensor = tensor.cpu()
    return tensor.numpy() if as_numpy else tensor


def dtoh_without_streams(self: Any, point: str, tokens_per_expert: Any = None) -> Any:
    """Bring the alltoall dispatcher's split sizes to the host, without CUDA side streams.

    Replaces ``MoEAlltoAllTokenDispatcher._maybe_dtoh_and_synchronize``. On MindSpore's CPU backend it
    compares ``torch.cuda.current_stream()`` with a ``torch.cuda.Stream()`` that is ``None``
    (``TypeError`` in ``Stream.__eq__``); on CPU PyTorch the tensors are not ``is_cuda``, so megatron
    leaves the split sizes as tensors, which ``all_to_all_single`` rejects (it wants the NumPy/int
    lists a GPU run gets). Here the same conversions happen at the same point, synchronously, for
    tensors wherever they are.
    """
    if self.drop_and_pad or point != self.cuda_dtoh_point:
        return tokens_per_expert
    tokens_per_expert = _to_host(tokens_per_expert)
    self.input_splits = _to_host(self.input_splits, as_numpy=True)
    self.output_splits = _to_host(self.output_splits, as_numpy=True)
    self.output_splits_tp = _to_host(self.output_splits_tp, as_numpy=True)
    self.num_out_tokens = _to_host(self.num_out_tokens)
    if self.num_local_experts > 1 and not self.config.moe_permute_fusion:
        self.num_global_tokens_per_local_expert = _to_host(self.num_global_tokens_per_local_expert)
    return tokens_per_expert


def new_empty(self: Any, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
              **kwargs: Any) -> Any:
    """Return an uninitialised tensor of ``size`` with ``self``'s dtype by default (``Tensor.new_empty``).

    MSAdapter's ``new_empty`` rejects a list as ``size`` ("must be tuple of int but got list") where
    PyTorch accepts any sequence (megatron's unequal all-to-all allocates with ``size=[...]``), and
    it allocates on an accelerator device ("Create device context failed") on a CPU build.
    """
    del device  # on the CPU backend every tensor is on the CPU
    import torch

    if "size" in kwargs:
        size = (kwargs.pop("size"),)
    if kwargs:
        raise TypeError(f"new_empty() got unexpected keyword arguments {sorted(kwargs)}")
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    shape = tuple(int(n) for n in size)
    return torch.empty(shape, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)


def empty_like_wrapper(empty_like: Any) -> Any:
    """Allocate ``torch.empty_like`` on the CPU (wrap of MSAdapter's ``empty_like``).

    MSAdapter's tensors on the CPU backend report the Ascend device, and ``empty_like`` allocates on the
    input's device unless told otherwise: "Create device context failed" (megatron's unequal-split
    reduce-scatter allocates its output with ``torch.empty_like``).
    """
    import functools

    @functools.wraps(empty_like)
    def empty_like_(input: Any, *args: Any, device: Any = None, **kwargs: Any) -> Any:  # noqa: A002  (torch's name)
        del device  # on the CPU backend every tensor is on the CPU
        return empty_like(input, *args, device="cpu", **kwargs)

    return empty_like_
