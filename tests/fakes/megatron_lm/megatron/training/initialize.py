import random
from datetime import timedelta

import numpy as np
import torch
from megatron.core import mpu, tensor_parallel
from megatron.legacy import fused_kernels
from megatron.training.arguments import parse_args, validate_args
from megatron.training.global_vars import get_args, set_global_variables


def initialize_megatron(extra_args_provider=None, args_defaults={}, ignore_unknown_args=False,  # noqa: B006
                        allow_no_cuda=False,
                        skip_mpu_initialization=False, get_embedding_ranks=None, get_position_embedding_ranks=None,
                        parsed_args=None):
    if not allow_no_cuda:
        # Make sure cuda is available.
        assert torch.cuda.is_available(), "Megatron requires CUDA."
    args = parse_args(extra_args_provider, ignore_unknown_args) if parsed_args is None else parsed_args
    validate_args(args, args_defaults)
    set_global_variables(args)

    def finish_mpu_init():
        args = get_args()
        _initialize_distributed(get_embedding_ranks, get_position_embedding_ranks)
        _set_random_seed(args.seed, args.data_parallel_random_init, args.te_rng_tracker, args.inference_rng_tracker,
                         use_cudagraphable_rng=args.enable_cuda_graph)

    if skip_mpu_initialization:
        return None
    finish_mpu_init()
    _compile_dependencies()
    return None


def _compile_dependencies():
    args = get_args()
    if torch.distributed.get_rank() == 0:
        from megatron.core.datasets.utils import compile_helpers

        compile_helpers()
    if torch.distributed.get_rank() == 0:
        fused_kernels.load(args)
        torch.distributed.barrier()
    else:
        torch.distributed.barrier()
        fused_kernels.load(args)
    torch.distributed.barrier()


def _initialize_distributed(get_embedding_ranks, get_position_embedding_ranks):
    args = get_args()
    device_count = torch.cuda.device_count()
    if torch.distributed.is_initialized():
        args.rank = torch.distributed.get_rank()
        args.world_size = torch.distributed.get_world_size()
    else:
        if device_count > 0:
            torch.cuda.set_device(args.local_rank)
        timeout = timedelta(minutes=args.distributed_timeout_minutes)
        torch.distributed.init_process_group(backend=args.distributed_backend, world_size=args.world_size,
                                             rank=args.rank, timeout=timeout)
    if device_count > 0:
        if not mpu.model_parallel_is_initialized():
            mpu.initialize_model_parallel(args.tensor_model_parallel_size, args.pipeline_model_parallel_size)


def _set_random_seed(seed_, data_parallel_random_init=False, te_rng_tracker=False, inference_rng_tracker=False,
                     use_cudagraphable_rng=False):
    if seed_ is not None and seed_ > 0:
        seed = seed_ + (100 * mpu.get_pipeline_model_parallel_rank())
        if data_parallel_random_init:
            seed = seed + (10 * mpu.get_data_parallel_rank())
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        if torch.cuda.device_count() > 0:
            tensor_parallel.model_parallel_cuda_manual_seed(seed, te_rng_tracker, inference_rng_tracker,
                                                            use_cudagraphable_rng)
    else:
        raise ValueError(f"Seed ({seed_}) should be a positive integer.")


def set_jit_fusion_options():
    _warmup_jit_function()


def _warmup_jit_function():
    args = get_args()
    bias = torch.rand(8 // args.tensor_model_parallel_size, dtype=torch.float32, device="cuda")
    del bias
