"""Built-in provider: megatron-core on a CPU build of PyTorch (the reference a parity run compares with).

Unlike the other providers this one serves PyTorch mode: :mod:`mindspeed_ms.adaptation` registers
it when the framework is PyTorch and the machine has no CUDA device; in MindSpore mode it registers
nothing. ``MINDSPEED_MS_DISABLE=pytorch_cpu`` turns it off.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MEGATRON_CORE_REQUIREMENT, MEGATRON_LM_REQUIREMENT

name = "pytorch_cpu"
requires = ()

_MEGATRON = (MEGATRON_CORE_REQUIREMENT,)
_MEGATRON_LM = (MEGATRON_CORE_REQUIREMENT, MEGATRON_LM_REQUIREMENT)  # megatron.training / .legacy
_TORCH = ("torch>=2.1",)  # real PyTorch (this provider never runs under MSAdapter)
_TRACKER = "megatron.core.tensor_parallel.random.CudaRNGStatesTracker"
#: torch creation functions megatron calls with device='cuda' or torch.cuda.current_device() (arange: the rotary
#: embedding's inv_freq without --use-cpu-initialization).
_CREATION = ("tensor", "empty", "zeros", "ones", "full", "arange")


def register(registry: Any, args: Any) -> None:
    """Register the CPU-PyTorch patches, or nothing unless ``args.ai_framework`` is ``"pytorch"``.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the flags the adaptation hands providers; ``args.ai_framework`` is the framework it decided.
    """
    if getattr(args, "ai_framework", None) != "pytorch":
        return
    from mindspeed_ms.compat import pytorch_cpu as compat

    registry.register(f"{_TRACKER}.add", compat.cpu_tracker_add, requires=_MEGATRON,
                      purpose="the model-parallel RNG tracker reads torch.cuda.get_rng_state(), which fails without "
                              "CUDA; its named states become CPU generator states")
    registry.register(f"{_TRACKER}.fork", compat.cpu_tracker_fork, requires=_MEGATRON,
                      purpose="the tracker's fork swaps CUDA RNG states; on CPU it swaps the CPU generator's")
    registry.register("megatron.core.optimizer.clip_grads.clip_grad_by_total_norm_fp32",
                      compat.clip_grad_by_total_norm_fp32, requires=_MEGATRON,
                      purpose="gradient clipping asserts param.grad.type() == 'torch.cuda.FloatTensor'")
    for function in _CREATION:
        registry.register(f"torch.{function}", compat.cpu_device_wrapper, kind="wrap", requires=_TORCH,
                          purpose=f"megatron calls torch.{function}(..., device='cuda'), which fails without CUDA")
    registry.register("torch.Tensor.to", compat.tensor_to_cpu_wrapper, kind="wrap", requires=_TORCH,
                      purpose="megatron's rotary embedding moves inv_freq with .to(device=torch.cuda.current_device()) "
                              "on its first forward, which raises without CUDA; the tensor stays on the CPU")
    registry.register("torch.cuda.current_device", compat.current_device, requires=_TORCH,
                      purpose="megatron allocates on torch.cuda.current_device(), which raises without CUDA")
    from mindspeed_ms.compat import tensor_type

    registry.register("torch.Tensor.type", tensor_type.scoped_cuda_type_name_wrapper, kind="wrap", requires=_TORCH,
                      purpose="megatron's optimizers accept only params whose type() is 'torch.cuda.FloatTensor' "
                              "(and Half/BFloat16); on CPU it is 'torch.FloatTensor': the CUDA name inside them only")
    for target in tensor_type.MEGATRON_TYPE_CHECKS:
        registry.register(target, tensor_type.cuda_type_names_wrapper, kind="wrap", requires=_MEGATRON,
                          purpose=tensor_type.MEGATRON_TYPE_CHECKS_PURPOSE)
    from mindspeed_ms.compat import megatron_parallel

    registry.register("megatron.core.optimizer.distrib_optimizer.quantize_param_shard",
                      megatron_parallel.quantize_param_shard, requires=_MEGATRON,
                      purpose="without Transformer Engine megatron's FP8 fallback raises even with no FP8 parameter: "
                              "every distributed-optimizer step failed")
    registry.register("torch.cuda.Stream", compat.CpuStream, requires=_TORCH,
                      purpose="megatron's MoE alltoall dispatcher creates a torch.cuda.Stream(), which raises "
                              "without CUDA")
    registry.register(
        "megatron.core.transformer.moe.token_dispatcher.MoEAlltoAllTokenDispatcher._maybe_dtoh_and_synchronize",
        megatron_parallel.dtoh_without_streams, requires=_MEGATRON,
        purpose="the alltoall dispatcher copies its split sizes on a CUDA side stream; copy them synchronously")
    registry.register("torch.Tensor.new_empty", compat.cpu_device_wrapper, kind="wrap", requires=_TORCH,
                      purpose="megatron's unequal all-to-all allocates new_empty(..., "
                              "device=torch.cuda.current_device())")
    registry.register("torch.Tensor.cuda", compat.tensor_stays_on_cpu, requires=_TORCH,
                      purpose="megatron's pipeline schedule calls torch.tensor(0).cuda(), which raises without CUDA")
    registry.register("torch.cuda.synchronize", compat.synchronize, requires=_TORCH,
                      purpose="megatron's pipeline p2p calls torch.cuda.synchronize(), which raises without CUDA")
    registry.register("megatron.core.tensor_parallel.random._get_cuda_rng_state", compat.get_device_rng_state,
                      requires=_MEGATRON,
                      purpose="activation recompute saves torch.cuda's RNG state, which raises without CUDA")
    registry.register("megatron.core.tensor_parallel.random._set_cuda_rng_state", compat.set_device_rng_state,
                      requires=_MEGATRON,
                      purpose="activation recompute restores torch.cuda's RNG state, which raises without CUDA")
    registry.register("torch.cuda.get_rng_state", compat.cuda_get_rng_state, requires=_TORCH,
                      purpose="Megatron-LM's save_checkpoint stores torch.cuda.get_rng_state(), which raises without "
                              "CUDA: every --save failed; the device generator is the CPU one")
    registry.register("torch.cuda.set_rng_state", compat.cuda_set_rng_state, requires=_TORCH,
                      purpose="Megatron-LM's load_checkpoint sets torch.cuda.set_rng_state(), which raises without "
                              "CUDA: every --load failed; the device generator is the CPU one")
    registry.register("torch.set_rng_state", compat.set_rng_state_wrapper, kind="wrap", requires=_TORCH,
                      purpose="Megatron-LM's load_checkpoint of a checkpoint MindSpore wrote restores MindSpore's "
                              "random state into PyTorch's generator (RuntimeError on its size): a typed error that "
                              "says to resume with --no-load-rng")
    registry.register("megatron.core.transformer.moe.router.Router.gating", compat.router_gating, requires=_MEGATRON,
                      purpose="the MoE router moves its weight to torch.cuda.current_device() on every forward")
    from mindspeed_ms.compat import cpu_collectives

    registry.register("torch.distributed.distributed_c10d.all_gather", cpu_collectives.all_gather_wrapper,
                      kind="wrap", requires=_TORCH,
                      purpose="gloo's all_gather rejects tensors of unequal sizes (megatron's unequal-split gather: "
                              "MoE dispatcher with tensor x expert parallel); gather padded buffers")
    registry.register("torch.distributed.distributed_c10d.reduce_scatter", cpu_collectives.reduce_scatter,
                      requires=_TORCH,
                      purpose="gloo has no reduce_scatter (megatron's unequal-split reduce-scatter); one all-reduce "
                              "of the concatenated blocks")
    from mindspeed_ms.compat import checkpoint

    registry.register("megatron.core.dist_checkpointing.strategies.filesystem_async._write_item",
                      checkpoint.write_item_wrapper, kind="wrap", requires=_MEGATRON + _TORCH,
                      purpose="megatron-core 0.12.1's torch_dist writer calls PyTorch's _write_item without the "
                              "serialization_format argument PyTorch 2.7+ requires (TypeError on every save)")
    registry.register("megatron.core.optimizer.distrib_optimizer.DistributedOptimizer.state_dict",
                      checkpoint.distributed_optimizer_state_dict_wrapper, kind="wrap", requires=_MEGATRON,
                      purpose="without Apex/TE the distributed optimizer's state_dict asserts one 'step' among its "
                              "(still empty) states before the first step: loading a torch_dist checkpoint failed")
    registry.register("megatron.core.optimizer.distrib_optimizer.DistributedOptimizer."
                      "_set_main_param_and_optimizer_states", checkpoint.set_states_keeping_step_wrapper,
                      kind="wrap", requires=_MEGATRON, purpose=checkpoint.SET_STATES_PURPOSE)
    registry.register("megatron.training.checkpointing.fix_fp8_params_lose_precision_when_loading_dist_ckpt",
                      checkpoint.fp8_fix_without_te_wrapper, kind="wrap", requires=_MEGATRON_LM,
                      purpose=checkpoint.FP8_FIX_PURPOSE)
    from mindspeed_ms.patches.megatron_core import TORCH_NORM_PURPOSE

    registry.register("megatron.core.transformer.torch_norm.WrappedTorchNorm.__new__",
                      megatron_parallel.wrapped_torch_norm_new, requires=_MEGATRON, purpose=TORCH_NORM_PURPOSE)
    _register_training(registry)


def _register_training(registry: Any) -> None:
    """Register the fixes of Megatron-LM's training entry (``megatron.training``) on CPU PyTorch."""
    from mindspeed_ms.compat import megatron_training as training
    from mindspeed_ms.patches import megatron_training as shared

    initialize = "megatron.training.initialize"
    registry.register(f"{initialize}.initialize_megatron", training.allow_no_cuda_wrapper, kind="wrap",
                      requires=_MEGATRON_LM, purpose=shared.ALLOW_NO_CUDA_PURPOSE)
    registry.register("megatron.training.arguments.validate_args", training.max_connections_wrapper, kind="wrap",
                      requires=_MEGATRON_LM, purpose=shared.MAX_CONNECTIONS_PURPOSE)
    registry.register(f"{initialize}._initialize_distributed", training.initialize_distributed_wrapper, kind="wrap",
                      requires=_MEGATRON_LM,
                      purpose="megatron initialises model parallelism only if torch.cuda.device_count() > 0 (0 on "
                              "CPU PyTorch): every rank ran without tensor/pipeline groups")
    registry.register(f"{initialize}._set_random_seed", training.set_random_seed_wrapper, kind="wrap",
                      requires=_MEGATRON_LM,
                      purpose="megatron seeds the model-parallel RNG tracker only if torch.cuda.device_count() > 0 "
                              "(0 on CPU PyTorch): the tracker stayed empty")
    registry.register("megatron.core.datasets.__path__", training.with_prebuilt_helpers, kind="wrap",
                      requires=_MEGATRON, purpose=shared.DATASETS_PATH_PURPOSE)
    registry.register("megatron.core.datasets.utils.compile_helpers", training.compile_helpers, requires=_MEGATRON,
                      purpose=shared.COMPILE_HELPERS_PURPOSE)
    registry.register("megatron.legacy.fused_kernels.load", training.skip_fused_kernels, requires=_MEGATRON_LM,
                      purpose=shared.FUSED_KERNELS_PURPOSE)
    registry.register(f"{initialize}._warmup_jit_function", training.skip_jit_warmup, requires=_MEGATRON_LM,
                      purpose=shared.JIT_WARMUP_PURPOSE)
    registry.register("torch.nn.modules.module.Module.cuda", training.module_stays_on_cpu, requires=_TORCH,
                      purpose="Module.cuda() raises without CUDA (megatron's get_model: "
                              "model_module.cuda(torch.cuda.current_device())); the CPU is where it computes")
