"""Stand-in for ``mindspeed.core.distributed.param_and_grad_buffer`` (MindSpeed 2.2.0), written by us.

MindSpeed replaces megatron-core 0.12.1's ``_ParamAndGradBucketGroup`` grad/param sync because
torch_npu lacks ``_coalescing_manager``: the same work, one collective per bucket, straight into the
bucket's views of the grad/param buffer, and a *list* of handles that the finish methods wait on.
MindSpeed-LLM's ``megatron_basic`` feature registers all four (``force_patch=False``); our built-in
``megatron_core`` provider replaces the two ``start_*`` methods on the CPU, so these are what meets
our fallbacks. Same signatures and the same behaviour as the real ones (names, handle lists, the
in-place ``*=`` scaling, collectives into views); torch and megatron are imported inside, so the
stand-in imports without them.
"""

from __future__ import annotations

from typing import Any


def _dp_group(group: Any) -> Any:
    if group.ddp_config.use_distributed_optimizer:
        return group.intra_distributed_optimizer_instance_group
    return group.data_parallel_group


def _my_shard(group: Any, buffer: Any) -> Any:
    from megatron.core.distributed.param_and_grad_buffer import shard_buffer

    return shard_buffer(buffer, group.intra_distributed_optimizer_instance_size)[
        group.intra_distributed_optimizer_instance_rank]


def start_param_sync(self: Any, force_sync: bool = False) -> None:
    """All-gather every bucket's parameter shards, one collective per bucket (no coalescing manager)."""
    from megatron.core.distributed.param_and_grad_buffer import dist_all_gather_func

    assert self.ddp_config.use_distributed_optimizer
    if force_sync and self.param_gather_handle is not None:
        for handle in self.param_gather_handle:
            handle.wait()
        self.param_gather_handle = None
        return
    assert force_sync or self.param_gather_handle is None
    overlap = self.ddp_config.overlap_param_gather and not force_sync
    handles = [dist_all_gather_func(bucket.param_data, _my_shard(self, bucket.param_data),
                                    group=self.intra_distributed_optimizer_instance_group, async_op=overlap)
               for bucket in self.buckets]
    self.param_gather_handle = handles if overlap else None
    self.param_gather_dispatched = True


def finish_param_sync(self: Any, skip_next_bucket_dispatch: bool = False) -> None:
    """Wait for this bucket group's all-gathers (a list of handles) and dispatch the next group's."""
    assert self.ddp_config.use_distributed_optimizer
    assert self.ddp_config.overlap_param_gather
    if not self.param_gather_dispatched:
        self.start_param_sync()
    if self.param_gather_handle is None:
        return
    for handle in self.param_gather_handle:
        handle.wait()
    self.param_gather_handle = None
    following = self.next_param_gather_bucket_group
    if following is not None and not skip_next_bucket_dispatch and not following.param_gather_dispatched:
        following.start_param_sync()


def start_grad_sync(self: Any) -> None:
    """Scale and reduce every bucket's gradients in place, one collective per bucket."""
    import torch
    from megatron.core.distributed.param_and_grad_buffer import dist_reduce_scatter_func

    assert self.grad_reduce_handle is None, "a gradient reduction is already outstanding"
    if self.ddp_config.check_for_nan_in_grad:
        self.check_grads(check_for_nan_or_inf=self.ddp_config.check_for_nan_in_grad,
                         check_for_large=self.ddp_config.check_for_large_grads)
    for bucket in self.buckets:
        if bucket.gradient_scaling_factor != 1.0:
            bucket.grad_data *= bucket.gradient_scaling_factor  # in place, on a view of the grad buffer
    op = torch.distributed.ReduceOp.AVG if self.ddp_config.average_in_collective else torch.distributed.ReduceOp.SUM
    overlap = self.ddp_config.overlap_grad_reduce and self.ddp_config.num_distributed_optimizer_instances == 1
    handles = []
    for bucket in self.buckets:
        if self.ddp_config.use_distributed_optimizer:
            handles.append(dist_reduce_scatter_func(_my_shard(self, bucket.grad_data), bucket.grad_data, op=op,
                                                    group=_dp_group(self), async_op=overlap))
        else:
            handles.append(torch.distributed.all_reduce(bucket.grad_data, op=op, group=_dp_group(self),
                                                        async_op=overlap))
    self.grad_reduce_handle = handles if overlap else None


def finish_grad_sync(self: Any) -> None:
    """Start the reduction now (no overlap) or wait for its handles (overlap)."""
    self.param_gather_dispatched = False
    if not self.ddp_config.overlap_grad_reduce:
        self.start_grad_sync()
        return
    assert self.grad_reduce_handle is not None, "no gradient reduction was started for this bucket group"
    for handle in self.grad_reduce_handle:
        handle.wait()
    self.grad_reduce_handle = None
