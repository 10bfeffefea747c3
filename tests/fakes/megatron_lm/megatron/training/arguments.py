import argparse
import os


def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description="Megatron-LM Arguments", allow_abbrev=False)
    parser.add_argument("--tensor-model-parallel-size", type=int, default=1)
    parser.add_argument("--pipeline-model-parallel-size", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--data-parallel-random-init", action="store_true")
    parser.add_argument("--distributed-backend", default="nccl")
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    if ignore_unknown_args:
        args, _ = parser.parse_known_args()
    else:
        args = parser.parse_args()
    args.rank = int(os.getenv("RANK", "0"))
    args.world_size = int(os.getenv("WORLD_SIZE", "1"))
    args.local_rank = int(os.getenv("LOCAL_RANK", "0"))
    for name, value in (("virtual_pipeline_model_parallel_size", None), ("pipeline_model_parallel_split_rank", None),
                        ("pipeline_model_parallel_comm_backend", None), ("context_parallel_size", 1),
                        ("hierarchical_context_parallel_sizes", None), ("expert_model_parallel_size", 1),
                        ("num_distributed_optimizer_instances", 1), ("expert_tensor_parallel_size", None),
                        ("distributed_timeout_minutes", 10), ("nccl_communicator_config_path", None),
                        ("use_tp_pp_dp_mapping", False), ("encoder_tensor_model_parallel_size", 0),
                        ("encoder_pipeline_model_parallel_size", 0), ("enable_gloo_process_groups", True),
                        ("te_rng_tracker", False), ("inference_rng_tracker", False), ("enable_cuda_graph", False),
                        ("external_cuda_graph", False), ("use_torch_fsdp2", False), ("use_cpu_initialization", True),
                        ("init_model_with_meta_device", False)):
        setattr(args, name, value)
    return args


def validate_args(args, defaults={}):  # noqa: B006  (Megatron's signature)
    if args.tensor_model_parallel_size > 1:
        assert os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS') == "1", \
            "Using tensor model parallelism or context parallelism require setting the environment variable " \
            "CUDA_DEVICE_MAX_CONNECTIONS to 1"
    return args
