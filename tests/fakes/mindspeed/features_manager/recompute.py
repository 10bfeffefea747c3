"""Stand-in PyTorch feature: wrappers MindSpeed registers on the PyTorch path (MindSpeed-LLM clears them)."""

from functools import wraps

from mindspeed.features_manager.feature import MindSpeedFeature


def _pytorch_wrapper(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        return ("pytorch-wrapped", fn(*args, **kwargs))

    return wrapper


def checkpoint_forward_wrapper(fn):
    return _pytorch_wrapper(fn)


def checkpoint_backward_wrapper(fn):
    return _pytorch_wrapper(fn)


def reuse_fp32_param_init_wrapper(fn):
    return _pytorch_wrapper(fn)


class RecomputeFeature(MindSpeedFeature):
    def __init__(self):
        super().__init__("recompute", optimization_level=0)

    def register_args(self, parser):
        parser.add_argument('--reuse-fp32-param', action='store_true', default=False)

    def register_patches(self, patch_manager, args):
        patch_manager.register_patch('mindspeed_llm.core.tensor_parallel.random.CheckpointFunction.forward',
                                     checkpoint_forward_wrapper)
        patch_manager.register_patch('mindspeed_llm.core.tensor_parallel.random.CheckpointFunction.backward',
                                     checkpoint_backward_wrapper)
        patch_manager.register_patch('mindspeed_llm.core.optimizer.distrib_optimizer.DistributedOptimizer.__init__',
                                     reuse_fp32_param_init_wrapper)
