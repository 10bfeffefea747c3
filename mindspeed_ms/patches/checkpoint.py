"""Built-in provider: Megatron's checkpoints (legacy ``torch`` and ``torch_dist``) on MSAdapter, readable by PyTorch.

Registered on every MindSpore device: the file format is the same on CPU and Ascend. The device a tensor
reports on the CPU backend (``cpu``, which megatron's checkpoint writer asserts) is the ``tensor_device``
provider's.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import (
    MEGATRON_CORE_REQUIREMENT,
    MEGATRON_LM_REQUIREMENT,
    MINDSPORE_REQUIREMENT,
    MSADAPTER_REQUIREMENT,
)

name = "checkpoint"
requires = (MSADAPTER_REQUIREMENT,)

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_MEGATRON = (MEGATRON_CORE_REQUIREMENT, MSADAPTER_REQUIREMENT)
_MEGATRON_LM = (MEGATRON_CORE_REQUIREMENT, MEGATRON_LM_REQUIREMENT, MSADAPTER_REQUIREMENT)  # megatron.training


def register(registry: Any, args: Any) -> None:
    """Register the checkpoint patches.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.compat import checkpoint, serialization

    registry.register(
        "msadapter.serialization.save", serialization.save, requires=_MSADAPTER,
        purpose="torch.save writes dtypes as MindSpore types and storages PyTorch maps to other dtypes: real "
                "PyTorch cannot read Megatron's checkpoints written on MindSpore; write PyTorch's zip format")
    registry.register(
        "msadapter.serialization.load", serialization.load_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.load of a PyTorch checkpoint raises KeyError 'IntStorage' (also Double, Short, Char), "
                "turns torch dtypes into strings and drops strides; read PyTorch's zip format")
    from mindspeed_ms.compat import dcp_metadata

    registry.register(
        "msadapter.distributed.checkpoint.filesystem.FileSystemWriter.finish", dcp_metadata.finish,
        requires=_MSADAPTER,
        purpose="a distributed checkpoint's .metadata is pickled with msadapter class paths and MindSpore dtypes: "
                "PyTorch cannot read it; pickle PyTorch's paths, dtypes and TensorProperties state")
    registry.register(
        "msadapter.distributed.checkpoint.filesystem.FileSystemReader.read_metadata", dcp_metadata.read_metadata,
        requires=_MSADAPTER,
        purpose="a PyTorch checkpoint's .metadata pickles its layout as torch.serialization._get_layout, which "
                "MSAdapter lacks (AttributeError): every torch_dist checkpoint written by PyTorch failed to load")
    registry.register(
        "msadapter.distributed.checkpoint.filesystem.FileSystemReader._slice_file", checkpoint.slice_file,
        requires=_MSADAPTER,
        purpose="the reader's view of one item reads and seeks to the end of the whole .distcp file, so each "
                "tensor was read with the file's last zip directory (wrong tensor, or BadZipFile)")
    registry.register(
        "msadapter.distributed.distributed_c10d.scatter_object_list", checkpoint.scatter_object_list,
        requires=_MSADAPTER,
        purpose="scatter_object_list raises AttributeError ('NoneType' object has no attribute 'item'); "
                "torch.distributed.checkpoint scatters its plans with it, so no torch_dist checkpoint loaded")
    for module in ("checkpoint.metadata", "_shard.sharded_tensor.metadata"):
        target = f"msadapter.distributed.{module}.TensorProperties"
        registry.register(
            f"{target}.__init__", dcp_metadata.tensor_properties_init_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="TensorProperties() rejects the layout/memory_format arguments megatron-core's torch_dist "
                    "strategy passes (TypeError)")
        registry.register(
            f"{target}.__setstate__", dcp_metadata.tensor_properties_setstate, requires=_MSADAPTER,
            purpose="a PyTorch checkpoint's TensorProperties state has five fields (with layout and memory "
                    "format); MSAdapter's unpickling expects three and raises")
    registry.register(
        "msadapter.nn.modules.module.Module._save_to_state_dict", checkpoint.save_to_state_dict,
        requires=_MSADAPTER,
        purpose="state_dict(keep_vars=True) holds copies (param.cpu()), not the parameters: megatron's optimizer "
                "matches its parameters in the sharded state dict by identity and fails ('Param id 0 does not "
                "match any model sharded param'); keep PyTorch's rule")
    registry.register(
        "megatron.core.optimizer.distrib_optimizer.DistributedOptimizer._set_main_param_and_optimizer_states",
        checkpoint.set_states_keeping_step_wrapper, kind="wrap", requires=_MEGATRON,
        purpose=checkpoint.SET_STATES_PURPOSE)
    registry.register(
        "megatron.core.optimizer.distrib_optimizer.DistributedOptimizer.state_dict",
        checkpoint.distributed_optimizer_state_dict_wrapper, kind="wrap", requires=_MEGATRON,
        purpose="without Apex/TE the distributed optimizer's state_dict asserts one 'step' among its (still empty) "
                "states before the first step: loading a torch_dist checkpoint failed")
    registry.register(
        "megatron.training.checkpointing.fix_fp8_params_lose_precision_when_loading_dist_ckpt",
        checkpoint.fp8_fix_without_te_wrapper, kind="wrap", requires=_MEGATRON_LM, purpose=checkpoint.FP8_FIX_PURPOSE)
