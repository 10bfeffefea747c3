"""Stand-in for ``mindspeed_llm/mindspore/mindspore_adaptor_v2.py`` (MindSpeed-LLM's MindSpore backend).

Same shapes as the real module: a ``MindSporeAdaptation`` subclass of MindSpeed's manager whose
``register_patch`` staticmethod forwards to the base's (with ``check_patch``), replacements imported
eagerly from modules that import torch, registrations gated on typed training flags, an early
``patches_info[t].apply_patch()``, wrapper removal with ``clear_wrapper_v2`` and
``mindspore_register_args(group)``. Targets live in the stand-in packages instead of megatron.
"""

import types

from mindspeed.patch_utils import MindSpeedPatchesManager
from mindspeed_llm.mindspore.utils import clear_wrapper_v2


class MindSporeAdaptation(MindSpeedPatchesManager):
    @staticmethod
    def register_patch(orig_func_name, new_func=None, force_patch=True, create_dummy=False, check_patch=False):
        if check_patch:
            new_func = MindSporeAdaptation.wrap_print_new_func(new_func)
        MindSpeedPatchesManager.register_patch(orig_func_name, new_func, force_patch, create_dummy)

    @staticmethod
    def wrap_print_new_func(new_func):
        from functools import wraps

        @wraps(new_func)
        def logged(*args, **kwargs):
            print(f"Stepping into MindSpore patch: {new_func.__name__}")
            return new_func(*args, **kwargs)

        return logged


def mindspore_adaptation(patch_manager, args):
    _patch_model_and_embedding()
    _patch_tensor_parallel_and_pipeline()
    _patch_moe_and_communication(args)
    _patch_optimizer_and_training(args)
    _patch_fused_operators(args)
    if args.moe_fb_overlap:  # undeclared: None on a Megatron-style namespace
        raise AssertionError("moe_fb_overlap is not given")
    if args.swap_optimizer:
        patch_swap_optimizer()
    if args.enable_seq1f1b:
        patch_seq1f1b(args)


def _patch_model_and_embedding():
    from mindspeed_llm.mindspore.core.models.rotary_pos_embedding import apply_llama3_scaling, yarn_linear_ramp_mask
    MindSporeAdaptation.register_patch(
        'mindspeed_llm.core.models.rotary_pos_embedding.apply_llama3_scaling', apply_llama3_scaling)
    MindSporeAdaptation.patches_info['mindspeed_llm.core.models.rotary_pos_embedding.apply_llama3_scaling'] \
        .apply_patch()
    MindSporeAdaptation.register_patch(
        'mindspeed_llm.core.models.rotary_pos_embedding.YarnRotaryPositionEmbedding.Scaling.yarn_linear_ramp_mask',
        yarn_linear_ramp_mask)


def _patch_tensor_parallel_and_pipeline():
    from mindspeed.mindspore.core.tensor_parallel.mappings import all_to_all_forward
    MindSporeAdaptation.register_patch('mindspeed_llm.core.tensor_parallel.mappings._AllToAll.forward',
                                       all_to_all_forward)
    from mindspeed.mindspore.core.tensor_parallel.random import local_set_cuda_rng_state
    MindSporeAdaptation.register_patch('mindspeed_llm.core.tensor_parallel.random._set_cuda_rng_state',
                                       local_set_cuda_rng_state, check_patch=True)
    from mindspeed.mindspore.core.pipeline_parallel.schedules import deallocate_output_tensor_
    MindSporeAdaptation.register_patch('mindspeed_llm.core.pipeline_parallel.schedules.deallocate_output_tensor',
                                       deallocate_output_tensor_)
    from mindspeed_llm.mindspore.training.utils import get_batch_on_this_tp_rank
    MindSporeAdaptation.register_patch('mindspeed_llm.training.utils.get_batch_on_this_tp_rank',
                                       get_batch_on_this_tp_rank)
    from mindspeed_llm.mindspore.core.tensor_parallel.layers import vocab_embedding_init_func
    MindSporeAdaptation.register_patch('mindspeed_llm.core.tensor_parallel.layers.VocabParallelEmbedding.__init__',
                                       vocab_embedding_init_func)
    from mindspeed_llm.mindspore.core.tensor_parallel.random import fork
    MindSporeAdaptation.register_patch('mindspeed_llm.core.tensor_parallel.random.CudaRNGStatesTracker.fork', fork)
    from mindspeed_llm.mindspore.core.tensor_parallel.data import broadcast_data
    MindSporeAdaptation.register_patch('mindspeed_llm.core.tensor_parallel.data.broadcast_data', broadcast_data)


def _patch_moe_and_communication(args):
    from mindspeed.mindspore.core.transformer.moe.comm_utils import async_all_to_all
    MindSporeAdaptation.register_patch('mindspeed.core.transformer.moe.comm_utils.async_all_to_all', async_all_to_all)
    from mindspeed.mindspore.core.transformer.moe.token_dispatcher import preprocess, token_permutation
    MindSporeAdaptation.register_patch('mindspeed.core.transformer.moe.token_dispatcher.preprocess', preprocess)
    MindSporeAdaptation.register_patch(
        'mindspeed.core.transformer.moe.token_dispatcher.MoEAlltoAllSeqOverLapDispatcher.token_permutation',
        token_permutation)
    if hasattr(args, 'moe_grouped_gemm') and args.moe_grouped_gemm:
        raise AssertionError("moe_grouped_gemm is not given")
    from mindspeed_llm.mindspore.core.transformer.moe.router import topk_router_gating_func
    MindSporeAdaptation.register_patch('mindspeed_llm.core.transformer.moe.router.TopKRouter.gating',
                                       topk_router_gating_func)


def _patch_optimizer_and_training(args):
    from mindspeed_llm.mindspore.core.tensor_parallel.cross_entropy import (
        calculate_predicted_logits,
        prepare_gradient_calculation_operands,
    )
    MindSporeAdaptation.register_patch(
        'mindspeed_llm.core.tensor_parallel.cross_entropy.VocabParallelCrossEntropy.calculate_predicted_logits',
        calculate_predicted_logits)
    MindSporeAdaptation.register_patch(
        'mindspeed_llm.core.tensor_parallel.cross_entropy.VocabParallelCrossEntropy.'
        'prepare_gradient_calculation_operands', prepare_gradient_calculation_operands)
    from mindspeed_llm.mindspore.tasks.checkpoint.models import get_modules_from_pretrained, register_functions
    MindSporeAdaptation.register_patch(
        'mindspeed_llm.tasks.checkpoint.models.ModelBase._ModelBase__register_functions', register_functions)
    MindSporeAdaptation.register_patch(
        'mindspeed_llm.tasks.checkpoint.models.HuggingfaceModel.get_modules_from_pretrained',
        get_modules_from_pretrained)
    if args.enable_share_memory:
        from mindspeed_llm.mindspore.tasks.dataset.shared_memory_manager import SharedMemoryManager
        MindSporeAdaptation.register_patch(
            'mindspeed_llm.tasks.dataset.shared_memory_manager.SharedMemoryManager', SharedMemoryManager)
        from mindspeed_llm.mindspore.training.utils import _compute_actual_seq_len
        MindSporeAdaptation.register_patch('mindspeed_llm.training.utils._compute_actual_seq_len',
                                           _compute_actual_seq_len)
    from mindspeed.mindspore.core.optimizer.distrib_optimizer import (
        get_parameter_state_dp_zero,
        load_parameter_state_from_dp_zero,
    )
    MindSporeAdaptation.register_patch(
        'mindspeed_llm.core.optimizer.distrib_optimizer.DistributedOptimizer.get_parameter_state_dp_zero',
        get_parameter_state_dp_zero)
    MindSporeAdaptation.register_patch(
        'mindspeed_llm.core.optimizer.distrib_optimizer.DistributedOptimizer.load_parameter_state_from_dp_zero',
        load_parameter_state_from_dp_zero)
    if args.reuse_fp32_param:
        from mindspeed.mindspore.optimizer.distrib_optimizer import reuse_fp32_param_distrib_optimizer_init_wrapper
        from mindspeed_llm.core.optimizer.distrib_optimizer import DistributedOptimizer
        target_func_name = 'mindspeed_llm.core.optimizer.distrib_optimizer.DistributedOptimizer.__init__'
        clear_wrapper_v2(target_func_name, DistributedOptimizer.__init__)
        MindSporeAdaptation.register_patch(target_func_name, reuse_fp32_param_distrib_optimizer_init_wrapper)


def _patch_fused_operators(args):
    from mindspeed.mindspore.ops.npu_rotary_position_embedding import npu_rotary_position_embedding
    MindSporeAdaptation.register_patch('mindspeed.ops.npu_rotary_position_embedding.npu_rotary_position_embedding',
                                       npu_rotary_position_embedding)
    if args.use_ascend_coc:
        raise AssertionError("use_ascend_coc is not given")
    if args.enable_a2avc:
        raise AssertionError("--enable-a2avc 0 must read as the int 0")
    from mindspeed.mindspore.ops.gmm import _GMM_patched_load, _GMM_patched_load2
    MindSporeAdaptation.register_patch('mindspeed.op_builder.gmm_builder.GMMOpBuilder.load', _GMM_patched_load)
    MindSporeAdaptation.register_patch('mindspeed.op_builder.gmm_builder.GMMV2OpBuilder.load', _GMM_patched_load2)
    from mindspeed.mindspore.ops.npu_matmul_add import npu_matmul_add_fp32
    MindSporeAdaptation.register_patch('fused_weight_gradient_mlp_cuda.wgrad_gemm_accum_fp32', npu_matmul_add_fp32,
                                       create_dummy=True)
    # a module as the replacement (the real one registers torch_npu for CoCOperations.mindspeed_ops)
    MindSporeAdaptation.register_patch('mindspeed.ops.lcal_functional.CoCOperations.mindspeed_ops',
                                       types.ModuleType("mindspeed_ops_on_mindspore"))


def patch_swap_optimizer():
    from mindspeed.mindspore.core.optimizer.swap_optimizer import swap_adamw_step
    MindSporeAdaptation.register_patch('mindspeed.core.optimizer.adamw.AdamW.step', swap_adamw_step)


def patch_seq1f1b(args):
    if args.seq1f1b_splits <= 1:
        raise ValueError("when setting enable_seq1f1b, seq1f1b_splits should be greater than 1")
    from mindspeed.mindspore.core.pipeline_parallel.seq1f1b.attention import (
        attention_forward_wrapper,
        attention_init_wrapper,
        core_attention_forward_wrapper,
    )
    MindSporeAdaptation.register_patch('mindspeed_llm.core.transformer.attention.Attention.__init__',
                                       attention_init_wrapper)
    MindSporeAdaptation.register_patch('mindspeed_llm.core.transformer.attention.Attention.forward',
                                       attention_forward_wrapper)
    MindSporeAdaptation.register_patch('mindspeed_llm.core.transformer.attention.DotProductAttention.forward',
                                       core_attention_forward_wrapper)
    from mindspeed.mindspore.core.pipeline_parallel.seq1f1b.rotary_pos_embedding import rotary_embedding_forward_wrapper
    MindSporeAdaptation.register_patch('mindspeed_llm.core.models.rotary_pos_embedding.RotaryEmbedding.forward',
                                       rotary_embedding_forward_wrapper)
    from mindspeed.mindspore.core.pipeline_parallel.seq1f1b.schedules import (
        forward_backward_pipelining_without_interleaving_seq1f1b,
    )
    MindSporeAdaptation.register_patch(
        'mindspeed_llm.core.pipeline_parallel.schedules.forward_backward_pipelining_without_interleaving',
        forward_backward_pipelining_without_interleaving_seq1f1b)
    from mindspeed.mindspore.core.pipeline_parallel.seq1f1b.random import (
        checkpoint_backward_wrapper,
        checkpoint_forward_wrapper,
    )
    from mindspeed_llm.core.tensor_parallel.random import CheckpointFunction
    target_func_name = 'mindspeed_llm.core.tensor_parallel.random.CheckpointFunction.forward'
    clear_wrapper_v2(target_func_name, CheckpointFunction.forward)
    MindSporeAdaptation.register_patch(target_func_name, checkpoint_forward_wrapper)
    target_func_name = 'mindspeed_llm.core.tensor_parallel.random.CheckpointFunction.backward'
    clear_wrapper_v2(target_func_name, CheckpointFunction.backward)
    MindSporeAdaptation.register_patch(target_func_name, checkpoint_backward_wrapper)
    from mindspeed_llm.mindspore.core.transformer.moe.router import topk_router_routing_wrapper
    MindSporeAdaptation.register_patch('mindspeed_llm.core.transformer.moe.router.TopKRouter.routing',
                                       topk_router_routing_wrapper)
    from mindspeed_llm.mindspore.training.utils import get_batch_wrapper, sft_trainer_loss_func
    MindSporeAdaptation.register_patch('mindspeed_llm.training.utils.get_batch_on_this_tp_rank', get_batch_wrapper)
    MindSporeAdaptation.register_patch('mindspeed_llm.tasks.posttrain.sft_trainer.SFTTrainer.get_batch',
                                       get_batch_wrapper)
    MindSporeAdaptation.register_patch('mindspeed_llm.tasks.posttrain.sft_trainer.SFTTrainer.loss_func',
                                       sft_trainer_loss_func)


def mindspore_register_args(group):
    group.add_argument('--enable-a2avc', type=int, choices=[0, 1, 2], default=0,
                       help='0: disable a2avc, 1 or 2: enable it')
    group.add_argument('--enable-share-memory', action='store_true', default=False,
                       help='pass actual_seq_len through shared memory')
    group.add_argument('--enable-seq1f1b', action='store_true', default=False, help='enable seq1f1b')
    group.add_argument('--seq1f1b-splits', type=int, default=4, help='number of splits in seq1f1b')
    group.add_argument('--seq1f1b-balance-method', type=str, default='average', choices=['average', 'uniform_comp'],
                       help='how to balance the splits')
