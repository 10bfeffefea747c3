"""Built-in provider: the field's training entries (Megatron-LM's ``megatron.training``, MindSpeed) on a CPU.

MindSpeed-LLM's and Megatron-LM's ``pretrain_gpt.py`` run ``megatron.training``'s set-up, which assumes
CUDA (or, through MSAdapter, the Ascend runtime) before the first step; MindSpeed's modules import CANN's
``acl`` and its AdamW calls an Ascend-only fused kernel. Registered only when MindSpore computes on the
CPU (see :mod:`mindspeed_ms.device`); on Ascend the devices, kernels and ``acl`` exist. The same fixes for
the CPU PyTorch reference live in the ``pytorch_cpu`` provider. Replacement code:
:mod:`mindspeed_ms.compat.megatron_training`, :mod:`mindspeed_ms.compat.fused_adamw`.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from mindspeed_ms.versions import (
    MEGATRON_CORE_REQUIREMENT,
    MEGATRON_LM_REQUIREMENT,
    MINDSPORE_REQUIREMENT,
    MSADAPTER_REQUIREMENT,
)

name = "megatron_training"
requires = (MSADAPTER_REQUIREMENT,)

_MEGATRON = (MEGATRON_CORE_REQUIREMENT,)
_MEGATRON_LM = (MEGATRON_CORE_REQUIREMENT, MEGATRON_LM_REQUIREMENT)  # megatron.training / .legacy
_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_INITIALIZE = "megatron.training.initialize"

#: Purposes shared with the pytorch_cpu provider (the same fix on the CPU PyTorch reference).
ALLOW_NO_CUDA_PURPOSE = ("initialize_megatron asserts torch.cuda.is_available() ('Megatron requires CUDA.') unless "
                         "allow_no_cuda, which does nothing else; the CPU is where the model computes")
MAX_CONNECTIONS_PURPOSE = ("megatron refuses tensor/sequence parallelism unless CUDA_DEVICE_MAX_CONNECTIONS=1 (one "
                           "in-order CUDA queue); a CPU runs one stream in order: set it to 1 when unset")
DATASETS_PATH_PURPOSE = ("a Megatron-LM source checkout lacks the built helpers_cpp extension that "
                         "megatron.core.datasets.helpers imports on every rank; find it in the megatron-core wheel "
                         "of the same version, after the sources")
COMPILE_HELPERS_PURPOSE = ("compile_helpers runs 'make' in megatron/core/datasets (no Makefile in the wheel: 'No "
                           "targets specified'; in a checkout it needs pybind11 and writes into the tree) and exits; "
                           "the wheel's prebuilt helpers_cpp serves")
FUSED_KERNELS_PURPOSE = ("fused_kernels.load compiles megatron's CUDA softmax kernels (CUDA_HOME is None without "
                         "CUDA); on a CPU nothing runs them: the unfused softmax is used")
JIT_WARMUP_PURPOSE = ("the JIT warm-up allocates its inputs on device='cuda'; it only compiles the fused functions "
                      "ahead of training and changes no result")


def register(registry: Any, args: Any) -> None:
    """Register the training-entry patches, or nothing when MindSpore does not compute on the CPU.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.device import device_target

    if device_target() != "CPU":
        return
    from mindspeed_ms.compat import fused_adamw
    from mindspeed_ms.compat import megatron_training as compat

    registry.register(f"{_INITIALIZE}.initialize_megatron", compat.allow_no_cuda_wrapper, kind="wrap",
                      requires=_MEGATRON_LM, purpose=ALLOW_NO_CUDA_PURPOSE)
    registry.register("megatron.training.arguments.validate_args", compat.max_connections_wrapper, kind="wrap",
                      requires=_MEGATRON_LM, purpose=MAX_CONNECTIONS_PURPOSE)
    registry.register(
        "msadapter.cuda.device_count", compat.one_device_per_process, requires=_MSADAPTER,
        purpose="torch.cuda.device_count() asks the Ascend runtime ('Device Ascend not exist.'); with 0 devices "
                "megatron skips model-parallel set-up and the RNG tracker's seeding: each process computes on "
                "one device, the CPU")
    registry.register("megatron.core.datasets.__path__", compat.with_prebuilt_helpers, kind="wrap",
                      requires=_MEGATRON, purpose=DATASETS_PATH_PURPOSE)
    registry.register("megatron.core.datasets.utils.compile_helpers", compat.compile_helpers, requires=_MEGATRON,
                      purpose=COMPILE_HELPERS_PURPOSE)
    registry.register("megatron.legacy.fused_kernels.load", compat.skip_fused_kernels, requires=_MEGATRON_LM,
                      purpose=FUSED_KERNELS_PURPOSE)
    registry.register(f"{_INITIALIZE}._warmup_jit_function", compat.skip_jit_warmup, requires=_MEGATRON_LM,
                      purpose=JIT_WARMUP_PURPOSE)
    for method in ("cuda", "npu"):
        registry.register(
            f"msadapter.nn.modules.module.Module.{method}", compat.module_stays_on_cpu, requires=_MSADAPTER,
            purpose=f"Module.{method}() moves every tensor to 'Ascend', which raises on a CPU build (megatron's "
                    f"get_model: model_module.cuda(torch.cuda.current_device())); on CPU they already are where "
                    f"they compute")
    for fused in ("_fused_adamw_", "npu_apply_fused_adamw_v2"):
        registry.register(
            f"msadapter.{fused}", getattr(fused_adamw, fused.lstrip("_")), requires=_MSADAPTER,
            purpose=f"torch.{fused} calls the Ascend kernel npu_apply_fused_adamw_v2 ('The kernel AdamW "
                    f"unregistered' on CPU; MindSpeed's AdamW calls it per parameter): PyTorch's AdamW rule, in place")
    if importlib.util.find_spec("acl") is None:
        for function in ("acl.get_soc_name", "acl.rt.get_mem_info"):
            registry.register(
                function, compat.acl_unavailable(function), create_dummy=True, requires=_MSADAPTER,
                purpose="CANN's acl is absent off the NPU and MindSpeed's MoE, memory and MindSpeed-LLM's training "
                        "utilities 'import acl' at module level; an importable acl whose functions raise "
                        "AscendRuntimeUnavailableError")
