"""Pretrain a small megatron-core GPT on synthetic data, with tensor parallelism and a real optimizer.

PyTorch (GPUs):
    torchrun --nproc-per-node 2 examples/pretrain_gpt.py --tensor-model-parallel-size 2

MindSpore (msrun; CPU or Ascend), the same file plus one flag:
    msrun --worker_num=2 --local_worker_num=2 --master_port=8118 --join=True \
        examples/pretrain_gpt.py --tensor-model-parallel-size 2 --ai-framework mindspore

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

import numpy as np
import torch
from megatron.core import parallel_state
from megatron.core.models.gpt import GPTModel
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.optimizer import OptimizerConfig
from megatron.core.optimizer.optimizer import FP32Optimizer
from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
from megatron.core.transformer.transformer_config import TransformerConfig


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Pretrain a small megatron-core GPT on synthetic data")
    parser.add_argument("--tensor-model-parallel-size", type=int, default=1)
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--num-attention-heads", type=int, default=4)
    parser.add_argument("--seq-length", type=int, default=32)
    parser.add_argument("--vocab-size", type=int, default=128)
    parser.add_argument("--micro-batch-size", type=int, default=4)
    parser.add_argument("--train-iters", type=int, default=20)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--clip-grad", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--distributed-backend", default=None,
                        help="process-group backend (default: nccl with CUDA, else gloo)")
    parser.add_argument("--ai-framework", choices=("pytorch", "mindspore"), default="pytorch",
                        help="training framework backend (selected by the first import)")
    return parser.parse_args(argv)


def initialize_distributed(args):
    """Join the process group started by torchrun/msrun and build the model-parallel groups."""
    rank = int(os.environ.get("RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    backend = args.distributed_backend or ("nccl" if use_cuda else "gloo")
    torch.distributed.init_process_group(backend=backend, rank=rank, world_size=world_size)
    parallel_state.initialize_model_parallel(args.tensor_model_parallel_size, 1)
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
        hidden_dropout=0.0,
        attention_dropout=0.0,
        # Initialise each full weight on the CPU, then split it: the same model for any TP size.
        use_cpu_initialization=True,
    )
    return GPTModel(
        config=config,
        transformer_layer_spec=get_gpt_layer_local_spec(),
        vocab_size=args.vocab_size,
        max_sequence_length=args.seq_length,
    )


def synthetic_batch(iteration, args):
    """Counting sequences (each token is the previous one plus one, modulo the vocabulary) with random starts.

    Deterministic in (seed, iteration) and identical on every rank.
    """
    rng = np.random.RandomState(args.seed + iteration)
    start = rng.randint(0, args.vocab_size, size=(args.micro_batch_size, 1))
    sequence = (start + np.arange(args.seq_length + 1)[None, :]) % args.vocab_size
    data = torch.tensor(sequence, dtype=torch.int64)
    return data[:, :-1], data[:, 1:]


def main(argv=None):
    args = parse_args(argv)
    rank = initialize_distributed(args)
    set_random_seed(args.seed)
    model = build_model(args)

    optimizer_config = OptimizerConfig(optimizer="adam", lr=args.lr, weight_decay=args.weight_decay,
                                       clip_grad=args.clip_grad)
    adamw = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    optimizer = FP32Optimizer(adamw, optimizer_config, init_state_fn=None)

    seq = args.seq_length
    position_ids = torch.arange(seq, dtype=torch.int64).unsqueeze(0).expand(args.micro_batch_size, seq)
    attention_mask = torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq) < 0.5  # True = masked out

    model.train()
    step_times = []
    for iteration in range(1, args.train_iters + 1):
        start = time.perf_counter()
        tokens, labels = synthetic_batch(iteration, args)
        optimizer.zero_grad()
        per_token_loss = model(tokens, position_ids, attention_mask, labels=labels)
        loss = per_token_loss.float().mean()
        loss.backward()
        _, grad_norm, _ = optimizer.step()
        loss_value = loss.item()
        step_times.append(time.perf_counter() - start)
        if rank == 0:
            print(f"iteration {iteration:4d}/{args.train_iters:4d} | lm loss {loss_value:.6f} | "
                  f"grad norm {float(grad_norm or 0.0):.4f} | "
                  f"elapsed time per iteration (ms): {step_times[-1] * 1000:.1f}", flush=True)

    if rank == 0:
        timed = step_times[1:] or step_times  # the first iteration includes one-time setup
        print(f"training done: {args.train_iters} iterations, {len(timed) / sum(timed):.2f} iterations/s",
              flush=True)


if __name__ == "__main__":
    main()
