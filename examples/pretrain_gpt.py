"""Pretrain a small megatron-core GPT on synthetic data through Megatron's own training machinery.

Megatron's DistributedDataParallel (always), get_megatron_optimizer (optionally the distributed
optimizer), get_forward_backward_func (micro-batches, the 1F1B pipeline schedule when pp > 1),
tensor, pipeline, sequence and expert parallelism, activation recompute, checkpoint save/resume.
Data parallel size = world size / (tensor parallel size x pipeline parallel size).

PyTorch (GPUs; or a CPU build of PyTorch with gloo, megatron's CUDA assumptions patched by the
``pytorch_cpu`` provider that ``import mindspeed_ms.adaptor`` installs when there is no CUDA):
    torchrun --nproc-per-node 2 examples/pretrain_gpt.py --tensor-model-parallel-size 2

MindSpore (msrun; CPU or Ascend), the same file plus one flag:
    msrun --worker_num=2 --local_worker_num=2 --master_port=8118 --join=True \
        examples/pretrain_gpt.py --tensor-model-parallel-size 2 --ai-framework mindspore

Layouts (2 workers unless said; add ``--micro-batch-size 2 --global-batch-size 8`` for 4 micro-batches):
    data parallel 2 with DDP:         (no parallel flag)
    + the distributed optimizer:      --use-distributed-optimizer
    + overlapped grad/param sync:     --overlap-grad-reduce --overlap-param-gather
    pipeline 2 (1F1B):                --pipeline-model-parallel-size 2
    tensor 2 + sequence parallel:     --tensor-model-parallel-size 2 --sequence-parallel
    tensor 2 x pipeline 2 (4 workers) --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
    MoE, 4 experts, expert parallel 2 --num-experts 4 --expert-model-parallel-size 2
    activation recompute:             --recompute-granularity full --recompute-method uniform
                                      --recompute-num-layers 1
    checkpoint / resume:              --save DIR --save-interval 5, later --load DIR
examples/parallel_configs.py runs them all and prints how each compares with the one-worker run.

Every parameter is initialised from its global name (a NumPy generator seeded by the seed and
the name, the full tensor drawn and this rank's tensor-parallel part taken), so every parallel
layout trains the same model from the same weights, and the global batch of an iteration is the
same for any layout: the runs are comparable step by step.

Checkpoints (``--save DIR --save-interval K``, ``--load DIR``, ``--ckpt-format torch_dist|torch``) are
Megatron's own: megatron-core's distributed checkpoint (``torch_dist``, the default) or Megatron-LM's
legacy per-rank ``torch.save`` files (``torch``), with ``DIR/latest_checkpointed_iteration.txt``; either
backend reads what the other wrote (examples/gpt_checkpointing.py). They hold the parameters, the
optimizer's state, the iteration and the random generators' states (``--no-load-rng`` keeps the current
generators: the other backend's torch generator state cannot be restored).

Each iteration prints one line on rank 0, e.g.
    iteration    3/  20 | lm loss 4.474159 | grad norm 2.7830 | elapsed time per iteration (ms): 512.3
and the run ends with ``training done: 20 iterations, 1.93 iterations/s``.
"""

import mindspeed_ms.adaptor  # noqa: F401  (first import: switches to MindSpore with --ai-framework mindspore)

# isort: split
import argparse
import os
import random
import time
import zlib

import numpy as np
import torch
from gpt_checkpointing import FORMATS, load_checkpoint, save_checkpoint
from megatron.core import parallel_state
from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig, finalize_model_grads
from megatron.core.models.gpt import GPTModel
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
from megatron.core.pipeline_parallel import get_forward_backward_func
from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
from megatron.core.transformer.transformer_config import TransformerConfig


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Pretrain a small megatron-core GPT on synthetic data")
    parser.add_argument("--tensor-model-parallel-size", type=int, default=1)
    parser.add_argument("--pipeline-model-parallel-size", type=int, default=1)
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--num-attention-heads", type=int, default=4)
    parser.add_argument("--seq-length", type=int, default=32)
    parser.add_argument("--vocab-size", type=int, default=128)
    parser.add_argument("--position-embedding-type", choices=("learned_absolute", "rope"), default="learned_absolute")
    parser.add_argument("--rotary-interleaved", action="store_true", help="with rope: megatron's interleaved pairs")
    parser.add_argument("--micro-batch-size", type=int, default=4)
    parser.add_argument("--global-batch-size", type=int, default=None,
                        help="sequences per iteration (default: micro batch size x data parallel size)")
    parser.add_argument("--train-iters", type=int, default=20)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--clip-grad", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--use-distributed-optimizer", action="store_true")
    parser.add_argument("--overlap-grad-reduce", action="store_true")
    parser.add_argument("--overlap-param-gather", action="store_true")
    parser.add_argument("--sequence-parallel", action="store_true")
    parser.add_argument("--num-experts", type=int, default=None, help="MoE layers with this many experts")
    parser.add_argument("--expert-model-parallel-size", type=int, default=1)
    parser.add_argument("--moe-token-dispatcher-type", choices=("allgather", "alltoall"), default="alltoall")
    parser.add_argument("--moe-router-topk", type=int, default=2)
    parser.add_argument("--recompute-granularity", choices=("full", "selective"), default=None)
    parser.add_argument("--recompute-method", choices=("uniform", "block"), default=None)
    parser.add_argument("--recompute-num-layers", type=int, default=None)
    parser.add_argument("--save", default=None, help="checkpoint directory to save into")
    parser.add_argument("--save-interval", type=int, default=None)
    parser.add_argument("--load", default=None, help="checkpoint directory to resume from")
    parser.add_argument("--ckpt-format", choices=FORMATS, default="torch_dist",
                        help="Megatron's checkpoint formats: torch_dist (dist_checkpointing) or torch (legacy)")
    parser.add_argument("--ckpt-step", type=int, default=None,
                        help="resume from this saved iteration instead of the last one")
    parser.add_argument("--no-load-rng", action="store_true",
                        help="resume without restoring the random generators' states")
    parser.add_argument("--distributed-backend", default=None,
                        help="process-group backend (default: nccl with CUDA, else gloo)")
    # default: $MINDSPEED_AI_FRAMEWORK, which `mindspeed-ms run --ai-framework` and `mindspeed-ms parity` set
    parser.add_argument("--ai-framework", choices=("pytorch", "mindspore"),
                        default=os.environ.get("MINDSPEED_AI_FRAMEWORK", "pytorch").strip().lower() or "pytorch",
                        help="training framework backend (selected by the first import; default: "
                             "$MINDSPEED_AI_FRAMEWORK, else pytorch)")
    return parser.parse_args(argv)


def initialize_distributed(args):
    """Join the process group started by torchrun/msrun and build the model-parallel groups."""
    rank = int(os.environ.get("RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    backend = args.distributed_backend or ("nccl" if use_cuda else "gloo")
    if not torch.distributed.is_initialized():  # joined already by an earlier main() of this process
        torch.distributed.init_process_group(backend=backend, rank=rank, world_size=world_size)
    parallel_state.initialize_model_parallel(
        args.tensor_model_parallel_size, args.pipeline_model_parallel_size,
        expert_model_parallel_size=args.expert_model_parallel_size)
    return torch.distributed.get_rank()


def set_random_seed(seed):
    """Seed every generator, as Megatron-LM does; the model-parallel RNG tracker too."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    model_parallel_cuda_manual_seed(seed)


def build_model(args):
    config = TransformerConfig(
        num_layers=args.num_layers,
        hidden_size=args.hidden_size,
        num_attention_heads=args.num_attention_heads,
        tensor_model_parallel_size=args.tensor_model_parallel_size,
        pipeline_model_parallel_size=args.pipeline_model_parallel_size,
        pipeline_dtype=torch.float32,
        # as Megatron-LM's training does: free the data of activations sent to the next stage
        deallocate_pipeline_outputs=args.pipeline_model_parallel_size > 1,
        sequence_parallel=args.sequence_parallel,
        expert_model_parallel_size=args.expert_model_parallel_size,
        num_moe_experts=args.num_experts,
        moe_router_topk=args.moe_router_topk if args.num_experts else 2,
        moe_token_dispatcher_type=args.moe_token_dispatcher_type,
        add_bias_linear=not args.num_experts,  # Megatron's MoE layers have no biases
        recompute_granularity=args.recompute_granularity,
        recompute_method=args.recompute_method,
        recompute_num_layers=args.recompute_num_layers,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        rotary_interleaved=args.rotary_interleaved,
        # Initialise each full weight on the CPU, then split it (the weights are set again by name below).
        use_cpu_initialization=True,
    )
    model = GPTModel(
        config=config,
        transformer_layer_spec=get_gpt_layer_local_spec(num_experts=args.num_experts),
        vocab_size=args.vocab_size,
        max_sequence_length=args.seq_length,
        position_embedding_type=args.position_embedding_type,
        pre_process=parallel_state.is_pipeline_first_stage(),
        post_process=parallel_state.is_pipeline_last_stage(),
    )
    initialize_parameters_by_name(model, args)
    return config, model


def global_parameter_name(name, model, args):
    """Name ``name`` (a parameter of this rank's model) as in the one-worker model.

    Local layer and expert indices become global ones; the last pipeline stage's copy of the tied
    output weight is the input embedding.
    """
    parts = name.split(".")
    if parts[:2] == ["decoder", "layers"]:
        parts[2] = str(model.decoder.layers[int(parts[2])].layer_number - 1)
    if "local_experts" in parts:
        index = parts.index("local_experts") + 1
        local_experts = args.num_experts // args.expert_model_parallel_size
        parts[index] = str(parallel_state.get_expert_model_parallel_rank() * local_experts + int(parts[index]))
    if name == "output_layer.weight" and model.share_embeddings_and_output_weights:
        return "embedding.word_embeddings.weight"
    return ".".join(parts)


def initialize_parameters_by_name(model, args):
    """Draw every weight from a generator seeded by (seed, global name): the same model for any layout.

    Norm weights and biases keep their constant initial values; each tensor-parallel rank takes its
    contiguous part of the full weight along the partition dimension (Megatron's CPU initialisation).
    """
    std = 0.02
    output_std = std / np.sqrt(2.0 * args.num_layers)  # Megatron's scaled init for layer outputs
    tp_rank = parallel_state.get_tensor_model_parallel_rank()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() < 2:
                continue
            global_name = global_parameter_name(name, model, args)
            full_shape = list(param.shape)
            partition_dim = getattr(param, "partition_dim", -1)
            is_split = getattr(param, "tensor_model_parallel", False) and partition_dim >= 0
            if is_split:
                full_shape[partition_dim] *= args.tensor_model_parallel_size
            scale = output_std if global_name.endswith(("linear_proj.weight", "linear_fc2.weight")) else std
            rng = np.random.RandomState((args.seed + zlib.crc32(global_name.encode())) % 2**32)
            full = rng.normal(0.0, scale, size=full_shape).astype(np.float32)
            if is_split:
                full = np.split(full, args.tensor_model_parallel_size, axis=partition_dim)[tp_rank]
            param.copy_(torch.tensor(np.ascontiguousarray(full), dtype=param.dtype))


def global_batch(iteration, args):
    """Counting sequences (each token is the previous one plus one, modulo the vocabulary) with random starts.

    The whole global batch of ``iteration``: deterministic in (seed, iteration), identical on every rank.
    """
    rng = np.random.RandomState(args.seed + iteration)
    start = rng.randint(0, args.vocab_size, size=(args.global_batch_size, 1))
    return (start + np.arange(args.seq_length + 1)[None, :]) % args.vocab_size


def micro_batches(iteration, args):
    """Yield this data-parallel rank's micro-batches of the iteration's global batch, in order."""
    dp_size = parallel_state.get_data_parallel_world_size()
    dp_rank = parallel_state.get_data_parallel_rank()
    per_rank = args.global_batch_size // dp_size
    mine = global_batch(iteration, args)[dp_rank * per_rank:(dp_rank + 1) * per_rank]
    seq = args.seq_length
    position_ids = torch.arange(seq, dtype=torch.int64).unsqueeze(0).expand(args.micro_batch_size, seq)
    attention_mask = torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq) < 0.5  # True = masked out
    for first in range(0, per_rank, args.micro_batch_size):
        data = torch.tensor(mine[first:first + args.micro_batch_size], dtype=torch.int64)
        yield {"tokens": data[:, :-1], "labels": data[:, 1:], "position_ids": position_ids,
               "attention_mask": attention_mask}


def loss_func(output_tensor):
    """Mean per-token loss of one micro-batch, and what to report."""
    loss = output_tensor.float().mean()
    return loss, {"lm loss": loss.detach().clone()}


def forward_step(data_iterator, model):
    batch = next(data_iterator)
    output_tensor = model(batch["tokens"], batch["position_ids"], batch["attention_mask"], labels=batch["labels"])
    return output_tensor, loss_func


def report_loss(losses_reduced):
    """Return the iteration's loss on every rank: the mean over micro-batches and data-parallel ranks.

    Only the last pipeline stage computes losses; one all-reduce over the world brings the value to
    rank 0 (every last-stage rank of a data-parallel replica holds the same one).
    """
    local = sum(float(item["lm loss"]) for item in losses_reduced) if losses_reduced else 0.0
    count = len(losses_reduced) if parallel_state.is_pipeline_last_stage() else 0
    totals = torch.tensor([local, float(count)], dtype=torch.float32)
    torch.distributed.all_reduce(totals)
    return float(totals[0]) / float(totals[1])


def main(argv=None):
    args = parse_args(argv)
    rank = initialize_distributed(args)
    dp_size = parallel_state.get_data_parallel_world_size()
    if args.global_batch_size is None:
        args.global_batch_size = args.micro_batch_size * dp_size
    if args.global_batch_size % (args.micro_batch_size * dp_size):
        raise SystemExit(f"--global-batch-size {args.global_batch_size} is not a multiple of micro batch size "
                         f"{args.micro_batch_size} x data parallel size {dp_size}")
    num_microbatches = args.global_batch_size // (args.micro_batch_size * dp_size)
    set_random_seed(args.seed)
    config, model = build_model(args)

    ddp_config = DistributedDataParallelConfig(use_distributed_optimizer=args.use_distributed_optimizer,
                                               overlap_grad_reduce=args.overlap_grad_reduce,
                                               overlap_param_gather=args.overlap_param_gather)
    model = DistributedDataParallel(config=config, ddp_config=ddp_config, module=model)
    optimizer = get_megatron_optimizer(
        OptimizerConfig(optimizer="adam", lr=args.lr, weight_decay=args.weight_decay, clip_grad=args.clip_grad,
                        use_distributed_optimizer=args.use_distributed_optimizer),
        [model])
    config.no_sync_func = model.no_sync
    config.finalize_model_grads_func = finalize_model_grads
    forward_backward_func = get_forward_backward_func()

    first_iteration = 1
    if args.load:
        first_iteration = load_checkpoint(args, model, optimizer) + 1

    model.train()
    step_times = []
    for iteration in range(first_iteration, args.train_iters + 1):
        start = time.perf_counter()
        model.zero_grad_buffer()
        optimizer.zero_grad()
        losses_reduced = forward_backward_func(
            forward_step_func=forward_step, data_iterator=micro_batches(iteration, args), model=[model],
            num_microbatches=num_microbatches, seq_length=args.seq_length, micro_batch_size=args.micro_batch_size,
            forward_only=False)
        _, grad_norm, _ = optimizer.step()
        loss_value = report_loss(losses_reduced)
        step_times.append(time.perf_counter() - start)
        if rank == 0:
            print(f"iteration {iteration:4d}/{args.train_iters:4d} | lm loss {loss_value:.6f} | "
                  f"grad norm {float(grad_norm or 0.0):.4f} | "
                  f"elapsed time per iteration (ms): {step_times[-1] * 1000:.1f}", flush=True)
        if args.save and args.save_interval and iteration % args.save_interval == 0:
            save_checkpoint(args, iteration, model, optimizer)

    if rank == 0 and step_times:
        timed = step_times[1:] or step_times  # the first iteration includes one-time setup
        print(f"training done: {len(step_times)} iterations, {len(timed) / sum(timed):.2f} iterations/s",
              flush=True)
    if args.ai_framework == "pytorch":
        # Leave the process group before the interpreter exits: gloo's threads torn down at exit abort a
        # worker now and then ("terminate called without an active exception"), failing a finished run.
        # Not on MindSpore: its CPU barrier is a ring all-reduce, and a rank that passes it and tears the
        # group down first fails the other's last send now and then; msrun ends the workers itself.
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
