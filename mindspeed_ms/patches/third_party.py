"""Built-in provider: third-party shims MSAdapter ships that mislead megatron-core."""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

name = "third_party"

#: (module, purpose): declared as data, so the adaptation puts them in force before any provider runs
blocks = (
    ("transformer_engine",
     "msadapter's transformer_engine shim makes megatron believe TE is installed, then fails on "
     "transformer_engine.pytorch.cpp_extensions"),
    ("apex",
     "msadapter's apex shim makes megatron pick FusedLayerNorm, which needs the CUDA extension "
     "fused_layer_norm_cuda"),
)


def register(registry: Any, args: Any) -> None:
    """Block MSAdapter's ``transformer_engine`` and ``apex`` shims on every device; make HF weights load and save.

    transformers' dtype names and safetensors' ``pt`` framework (MindSpeed-LLM's convert_ckpt.py) on MSAdapter, and
    ``save_pretrained``: the dtype's name and ``torch._dynamo.eval_frame`` for accelerate's readers.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    for module, purpose in blocks:
        registry.block(module, purpose=purpose)
    from mindspeed_ms.compat import transformers_config

    registry.register("transformers.configuration_utils.PretrainedConfig.dict_dtype_to_str",
                      transformers_config.dict_dtype_to_str_wrapper, kind="wrap",
                      requires=("transformers>=4.56,<5", MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT),
                      purpose=transformers_config.PURPOSE)
    from mindspeed_ms.compat import transformers_save

    registry.register("transformers.modeling_utils.PreTrainedModel.save_pretrained",
                      transformers_save.save_pretrained_wrapper, kind="wrap",
                      requires=("transformers>=4.56,<5", MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT),
                      purpose=transformers_save.PURPOSE)
    from mindspeed_ms.compat import safetensors_open

    # the names transformers and safetensors.torch (load_file) call it by; safetensors.safe_open itself stays theirs
    _SAFETENSORS = ("safetensors>=0.4", MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
    for target, requires in (("transformers.modeling_utils.safe_open", ("transformers>=4.56,<5", *_SAFETENSORS)),
                             ("safetensors.torch.safe_open", _SAFETENSORS)):
        registry.register(target, safetensors_open.safe_open_wrapper, kind="wrap", requires=requires,
                          purpose=safetensors_open.PURPOSE)
    from mindspeed_ms.compat import safetensors_save

    for target, requires in (("transformers.modeling_utils.safe_save_file", ("transformers>=4.56,<5", *_SAFETENSORS)),
                             ("safetensors.torch.save_file", _SAFETENSORS)):
        registry.register(target, safetensors_save.save_file_wrapper, kind="wrap", requires=requires,
                          purpose=safetensors_save.PURPOSE)
    from mindspeed_ms.compat import dynamo_frames

    for target in ("accelerate.utils.other.is_compiled_module", "accelerate.utils.other.has_compiled_regions"):
        registry.register(target, dynamo_frames.eval_frame_reader_wrapper, kind="wrap",
                          requires=("accelerate>=0.20", MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT),
                          purpose=dynamo_frames.PURPOSE)
