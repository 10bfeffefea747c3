"""Two msrun workers: the CPU collective replacements and megatron's grad/param bucket sync; JSON lines on rank 0.

Run as ``msrun --worker_num=2 ... cpu_collectives.py`` with the built-in patches applied (as the
adaptor does), so ``torch.distributed.all_gather_into_tensor`` etc. are the replacements.
"""

from __future__ import annotations

import json
import types

from mindspeed_ms.adaptation import execute_mindspore

execute_mindspore()

# isort: split
import numpy as np  # noqa: E402
import torch  # noqa: E402
from megatron.core import parallel_state  # noqa: E402

from mindspeed_ms.compat import megatron_parallel as parallel  # noqa: E402

torch.distributed.init_process_group(backend="gloo")
rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
results: dict[str, object] = {}

# all_gather_into_tensor into a view of a bigger buffer (as megatron's param buffer)
buffer = torch.zeros(10)
local = torch.arange(4, dtype=torch.float32) + 10 * rank
torch.distributed.all_gather_into_tensor(buffer[1:9].view(8), local)
results["all_gather_into_tensor"] = buffer.numpy().tolist()

# booleans (the MoE allgather dispatcher gathers its routing map): the CPU AllGather kernel rejects bool
flags = torch.zeros(4, dtype=torch.bool)
flags[rank] = True
all_flags = torch.zeros(8, dtype=torch.bool)
torch.distributed.all_gather_into_tensor(all_flags, flags)
results["all_gather_bool"] = [str(all_flags.dtype), all_flags.numpy().tolist()]

# list all_gather of unequal sizes into views of one tensor (megatron's unequal-split gather)
rows_of = [2, 3]
gathered_rows = torch.zeros(sum(rows_of), 2)
views = list(torch.split(gathered_rows, rows_of, dim=0))
torch.distributed.all_gather(views, torch.full((rows_of[rank], 2), float(rank + 1), dtype=torch.float32))
results["all_gather_unequal_views"] = gathered_rows.numpy().tolist()
# the same with int64 values past 2**32 (the shorter tensor is padded: slice assignment kept only the low 32 bits)
big = torch.tensor([2 ** 40 + 7 * rank + i for i in range(rows_of[rank])], dtype=torch.int64)
gathered_big = torch.zeros(sum(rows_of), dtype=torch.int64)
torch.distributed.all_gather(list(torch.split(gathered_big, rows_of)), big)
results["all_gather_unequal_int64"] = gathered_big.tolist()

# list reduce_scatter of unequal blocks (no CPU kernel)
blocks = [torch.full((2,), float(rank + 1), dtype=torch.float32), torch.full((3,), 10.0 * (rank + 1),
                                                                              dtype=torch.float32)]
mine = torch.zeros(rows_of[rank])
torch.distributed.reduce_scatter(mine, blocks)
results["reduce_scatter_list"] = mine.numpy().tolist()

# reduce_scatter_tensor: each rank gets its block of the sum
source = torch.arange(6, dtype=torch.float32) * (rank + 1)
output = torch.zeros(3)
torch.distributed.reduce_scatter_tensor(output, source)
results["reduce_scatter_tensor"] = output.numpy().tolist()

# all_to_all_single with unequal splits: rank r sends (r + 1) rows to rank 0 and 2 rows to rank 1
send = [rank + 1, 2]
rows = torch.arange(sum(send) * 2, dtype=torch.float32).reshape(sum(send), 2) + 100 * rank
receive = [(source_rank + 1) if rank == 0 else 2 for source_rank in range(world)]
out = torch.zeros(sum(receive), 2)
handle = torch.distributed.all_to_all_single(out, rows, output_split_sizes=receive, input_split_sizes=send,
                                             async_op=True)
handle.wait()
results["all_to_all_single"] = out.numpy().tolist()

# object collectives (megatron's dist_checkpointing metadata): payloads of different sizes
objects: list[object] = [None] * world
torch.distributed.all_gather_object(objects, {"rank": rank, "names": ["w"] * (rank * 50 + 1)})
results["all_gather_object"] = [(item["rank"], len(item["names"])) for item in objects]
collected: list[object] | None = [None] * world if rank == 0 else None
torch.distributed.gather_object(("from", rank), collected, dst=0)
results["gather_object"] = collected
announced: list[object] = [f"plan of rank {rank}", rank * 10]
torch.distributed.broadcast_object_list(announced, src=1)
results["broadcast_object_list"] = announced

# megatron's bucket group: scaled all-reduce of a bucket view of the flat grad buffer, param all-gather
grad_buffer = torch.zeros(8)
main_grad = grad_buffer[0:4].view(2, 2)
main_grad.add_(torch.full((2, 2), float(rank + 1), dtype=torch.float32))
param_buffer = torch.zeros(8)
param_buffer[rank * 4:(rank + 1) * 4] = float(rank + 5)
param = torch.nn.Parameter(torch.zeros(2, 2))  # megatron bucket param, its main_grad a view of the buffer
param.main_grad = main_grad
ddp_config = types.SimpleNamespace(check_for_nan_in_grad=False, check_for_large_grads=False,
                                   num_distributed_optimizer_instances=1, use_distributed_optimizer=True,
                                   average_in_collective=False, overlap_grad_reduce=False,
                                   overlap_param_gather=False)
group = types.SimpleNamespace(
    grad_reduce_handle=None, param_gather_handle=None, param_gather_dispatched=False, ddp_config=ddp_config,
    intra_distributed_optimizer_instance_group=None, intra_distributed_optimizer_instance_rank=rank,
    intra_distributed_optimizer_instance_size=world, data_parallel_group=None,
    buckets=[types.SimpleNamespace(grad_data=grad_buffer[0:8].view(8), param_data=param_buffer[0:8].view(8),
                                   gradient_scaling_factor=0.5, params_list=[param], params={param})])
parallel.start_grad_sync(group)
parallel.start_param_sync(group)
results["bucket_grad_sync"] = main_grad.numpy().tolist()
results["bucket_param_sync"] = param_buffer.numpy().tolist()
handles = [type(group.grad_reduce_handle).__name__, type(group.param_gather_handle).__name__]
ddp_config.overlap_grad_reduce = ddp_config.overlap_param_gather = True  # megatron then waits on the handles
group.param_gather_handle = None
parallel.start_grad_sync(group)
parallel.start_param_sync(group)
handles += [type(group.grad_reduce_handle).__name__, type(group.param_gather_handle).__name__]
results["bucket_handles"] = handles
results["bucket_grad_sync_again"] = main_grad.numpy().tolist()

# the pipeline's p2p exchange: stage 0 sends forward and receives backward, stage 1 the other way round
parallel_state.initialize_model_parallel(1, 2)
activation = torch.full((2, 3), 7.0, dtype=torch.float32) if rank == 0 else None
gradient = torch.full((2, 3), -1.0, dtype=torch.float32) if rank == 1 else None
received = torch.zeros(2, 3)
if rank == 0:
    parallel.batched_p2p_ops(tensor_send_prev=None, tensor_recv_prev=None, tensor_send_next=activation,
                             tensor_recv_next=received, group=parallel_state.get_pipeline_model_parallel_group(),
                             prev_pipeline_rank=1, next_pipeline_rank=1)
else:
    parallel.batched_p2p_ops(tensor_send_prev=gradient, tensor_recv_prev=received, tensor_send_next=None,
                             tensor_recv_next=None, group=parallel_state.get_pipeline_model_parallel_group(),
                             prev_pipeline_rank=0, next_pipeline_rank=0)
results["p2p"] = received.numpy().tolist()

# collectives that write into their tensor argument, given views (DDP buckets are views of one buffer)
views = {}
for kind, make in (("slice", lambda b: b[2:4]), ("full_slice", lambda b: b[0:6]), ("reshape", lambda b: b.view(2, 3)),
                   ("transpose", lambda b: b.view(2, 3).t()), ("owner", lambda b: b)):
    base = torch.arange(6, dtype=torch.float32) * (rank + 1)
    torch.distributed.all_reduce(make(base))
    views[kind] = base.numpy().tolist()
base = torch.ones(4) * (rank + 1)
handle = torch.distributed.all_reduce(base[1:3], async_op=True)
handle.wait()
views["async"] = base.numpy().tolist()
base = torch.ones(4) * (rank + 1)
torch.distributed.broadcast(base[1:3], src=0)
views["broadcast"] = base.numpy().tolist()
base = torch.zeros(4)
if rank == 0:
    torch.distributed.send(torch.tensor([7.0, 8.0]), 1)
else:
    torch.distributed.recv(base[2:4], 0)
views["recv"] = base.numpy().tolist()
results["into_views"] = views

torch.distributed.barrier()
print("RESULT " + json.dumps({"rank": rank, **results}, default=lambda value: np.asarray(value).tolist()),
      flush=True)
