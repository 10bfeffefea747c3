"""Installing the parity capture in a training process: its patches, registered through the default registry.

The adaptor calls :func:`install_from_environment` in either framework mode; it does nothing unless
``MINDSPEED_MS_PARITY_DIR`` is set (by :func:`mindspeed_ms.parity.run_parity`). What the capture records is
described in :mod:`mindspeed_ms.parity.capture`.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from mindspeed_ms.parity.capture import PARITY_DIR_ENV, PARITY_LOAD_ENV, PARITY_ROLE_ENV, ParityCapture
from mindspeed_ms.parity.context_parallel import context_parallel_size

__all__ = ["install_from_environment"]

logger = logging.getLogger(__name__)

_CUSTOM_BACKWARD = "megatron.core.pipeline_parallel.schedules.custom_backward"
_DEALLOCATE = "megatron.core.pipeline_parallel.schedules.deallocate_output_tensor"
_START_GRAD_SYNC = "megatron.core.distributed.param_and_grad_buffer._ParamAndGradBucketGroup.start_grad_sync"
_OPTIMIZER_INIT = "megatron.core.optimizer.optimizer.MegatronOptimizer.__init__"


def _module_exists(dotted: str) -> bool:
    """Tell whether module ``dotted`` can be imported, importing nothing (and firing no import hook)."""
    from mindspeed_ms.engine.requirements import module_folders

    return module_folders(dotted) is not None


def _torch_targets() -> tuple[str, str]:
    """Return the dotted names of ``Module.__call__`` and ``Tensor.backward`` of this process's torch (now or later).

    In MindSpore mode (MSAdapter loaded) and once torch is imported they are read from the classes; in PyTorch mode
    before the import they are PyTorch's own names, so that nothing is imported to register them.
    """
    if "torch" in sys.modules or "msadapter" in sys.modules:
        import torch

        module, tensor = torch.nn.Module, torch.Tensor
        return (f"{module.__module__}.{module.__qualname__}.__call__",
                f"{tensor.__module__}.{tensor.__qualname__}.backward")
    return "torch.nn.modules.module.Module.__call__", "torch.Tensor.backward"


def install_from_environment(registry: Any, environ: Any = None) -> ParityCapture | None:
    """Install the capture when ``MINDSPEED_MS_PARITY_DIR`` is set; register its patches and apply them.

    Nothing is imported for it: in PyTorch mode the patches wait for ``torch`` (megatron's for megatron).

    Args:
        registry: the patch registry to register into (the adaptation's default one).
        environ: the environment; ``os.environ`` when None.

    Returns:
        The capture, or None when parity is off.
    """
    env = os.environ if environ is None else environ
    directory = env.get(PARITY_DIR_ENV)
    if not directory:
        return None
    capture = ParityCapture(directory, env.get(PARITY_ROLE_ENV, "reference"), int(env.get("RANK", "0")),
                            env.get(PARITY_LOAD_ENV) or None, context_parallel_size(env))
    call, backward = _torch_targets()
    registry.register(call, capture.wrap_call, kind="wrap",
                      purpose="parity: find the model, hand over its parameters and batches, record module outputs")
    registry.register(backward, capture.wrap_backward, kind="wrap",
                      purpose="parity: record each step's loss, gradient norm and first-step gradients")
    registry.register("torch.autograd.backward", capture.wrap_backward, kind="wrap",
                      purpose="parity: the same for torch.autograd.backward (megatron's pipeline schedules call it)")
    if _module_exists(_CUSTOM_BACKWARD.rpartition(".")[0]):
        registry.register(_CUSTOM_BACKWARD, capture.wrap_backward, kind="wrap",
                          purpose="parity: the same for megatron's custom_backward (deallocate_pipeline_outputs: "
                                  "the autograd engine called directly)")
        registry.register(_DEALLOCATE, capture.wrap_deallocate, kind="wrap",
                          purpose="parity: keep a last pipeline stage's loss before megatron frees its data "
                                  "(pipeline parallel: the backward sees one uninitialised element)")
    if capture.role == "candidate" and _module_exists(_OPTIMIZER_INIT.rsplit(".", 2)[0]):
        registry.register(_OPTIMIZER_INIT, capture.wrap_optimizer_init, kind="wrap",
                          purpose="parity: remember megatron's optimizers, whose float32 main parameters (--bf16, "
                                  "--fp16) are refreshed when the candidate loads the reference's parameters")
    if _module_exists(_START_GRAD_SYNC.rsplit(".", 2)[0]):
        registry.register(_START_GRAD_SYNC, capture.wrap_start_grad_sync, kind="wrap",
                          purpose="parity: keep the gradients DDP reduces inside a backward (overlap_grad_reduce), "
                                  "before the reduction")
    registry.apply()
    logger.info("parity capture on (%s, rank %d): %s", capture.role, capture.rank, capture.out)
    return capture
