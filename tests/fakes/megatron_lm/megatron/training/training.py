import torch
from megatron.training.global_vars import get_args


def get_model(model_provider_func, model_type=None, wrap_with_ddp=True):
    args = get_args()
    model = [model_provider_func()]
    # GPU allocation.
    if not (args.use_torch_fsdp2 and args.use_cpu_initialization) and not args.init_model_with_meta_device:
        for model_module in model:
            model_module.cuda(torch.cuda.current_device())
    return model
