"""Run mindspeed_ms.compat.megatron_parallel's single-process replacements under MSAdapter; print JSON lines.

Each case reports what the replacement computed and what PyTorch's semantics (written in NumPy) give.
Run in a subprocess: MSAdapter changes MindSpore's Tensor class for the whole process.
"""

from __future__ import annotations

import json
import sys
import types

import msadapter  # noqa: F401  (first: `import torch` is MSAdapter's)
import numpy as np
import torch

from mindspeed_ms.compat import megatron_parallel as parallel


def emit(case: str, **values: object) -> None:
    print(json.dumps({"case": case, **values}), flush=True)


def clone_cases() -> None:
    weight = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (weight * 2).mean()
    copy = parallel.clone(loss)
    (copy * 3).backward()
    emit("clone_0d", value=float(copy), grad=weight.grad.numpy().tolist(), fresh=copy.data_ptr() != loss.data_ptr())
    buffer = torch.tensor([0.1, -2.5, 3.0e-3, 7.0, 1.0e4, -0.3]).to(torch.bfloat16)
    shard = parallel.clone(buffer[2:5])  # --bf16 --use-distributed-optimizer's parameter all-gather
    emit("clone_bf16", values=shard.float().numpy().tolist(), expected=buffer[2:5].float().numpy().tolist(),
         dtype=str(shard.dtype), fresh=shard.data_ptr() != buffer[2:5].data_ptr())


def scatter_cases() -> None:
    scatter = parallel.scatter_value_wrapper(torch.Tensor.scatter)
    index = torch.tensor([[1, 3], [0, 2], [2, 3]])
    expected = np.zeros((3, 4), dtype=np.int32)
    np.put_along_axis(expected, index.numpy(), 1, axis=1)
    positional = scatter(torch.zeros(3, 4).int(), 1, index, 1)
    keyword = scatter(torch.zeros(3, 4), 1, index, value=2.5)
    emit("scatter_scalar", positional=positional.numpy().tolist(), dtype=str(positional.dtype),
         keyword=keyword.numpy().tolist(), expected=expected.tolist())


def unpermute_cases() -> None:
    rng = np.random.RandomState(0)
    tokens, experts, hidden = 5, 4, 3
    routing = np.zeros((tokens, experts), dtype=bool)
    for token in range(tokens):
        routing[token, rng.choice(experts, 2, replace=False)] = True
    probs = (rng.rand(tokens, experts) * routing).astype(np.float32)
    sorted_indices = np.concatenate([np.nonzero(routing[:, e])[0] for e in range(experts)])
    permuted = rng.randn(len(sorted_indices), hidden).astype(np.float32)
    permuted_probs = probs.T[routing.T]
    expected = np.zeros((tokens, hidden), dtype=np.float32)
    np.add.at(expected, sorted_indices, permuted * permuted_probs[:, None])
    source = torch.tensor(permuted, requires_grad=True)
    out = parallel.unpermute(source, torch.tensor(sorted_indices), torch.Size([tokens, hidden]),
                             probs=torch.tensor(probs), routing_map=torch.tensor(routing))
    out.sum().backward()
    emit("unpermute", out=out.detach().numpy().tolist(), expected=expected.tolist(),
         grad=source.grad.numpy().tolist(), expected_grad=np.repeat(permuted_probs[:, None], hidden, 1).tolist())


def new_empty_cases() -> None:
    base = torch.zeros(2, dtype=torch.float32)
    shapes = {
        "list": tuple(parallel.new_empty(base, size=[3, 4], device=0).shape),
        "tuple": tuple(parallel.new_empty(base, (2, 5)).shape),
        "varargs": tuple(parallel.new_empty(base, 1, 2, 3).shape),
    }
    emit("new_empty", shapes=shapes, dtype=str(parallel.new_empty(base, [2], dtype=torch.int64).dtype))


def norm_cases() -> None:
    config = types.SimpleNamespace(layernorm_zero_centered_gamma=False, persist_layer_norm=False,
                                   memory_efficient_layer_norm=False, normalization="LayerNorm",
                                   sequence_parallel=True)
    norm = parallel.wrapped_torch_norm_new(object, config, 8, eps=1e-5)
    emit("torch_norm", kind=type(norm).__name__,
         marked=[bool(getattr(p, "sequence_parallel", False)) for p in norm.parameters()])


def fp8_cases() -> None:
    parallel.quantize_param_shard([], [], [], None)
    try:
        parallel.quantize_param_shard([object()], [object()], [0], None)
    except NotImplementedError as error:
        emit("quantize", raised=str(error))
    else:
        emit("quantize", raised=None)


def empty_like_cases() -> None:
    empty_like = parallel.empty_like_wrapper(torch.empty_like)
    made = empty_like(torch.ones(3, 2, dtype=torch.float16), device=0)
    emit("empty_like", shape=list(made.shape), dtype=str(made.dtype))


def cuda_cases() -> None:
    tensor = torch.ones(2)
    emit("cuda", same=parallel.cuda(tensor) is tensor)


def bucket_state_cases() -> None:
    group = types.SimpleNamespace(grad_reduce_handle=object(), param_gather_handle=None,
                                  ddp_config=types.SimpleNamespace(use_distributed_optimizer=False))
    errors = []
    for call in (parallel.start_grad_sync, parallel.start_param_sync):
        try:
            call(group)
        except parallel.BucketSyncError as error:
            errors.append([error.operation, isinstance(error, RuntimeError), str(error)])
    emit("bucket_state", errors=errors)


if __name__ == "__main__":
    for run in (clone_cases, scatter_cases, unpermute_cases, new_empty_cases, norm_cases, fp8_cases, cuda_cases,
                bucket_state_cases, empty_like_cases):
        run()
    sys.exit(0)
