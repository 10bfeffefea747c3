# a sibling that `from`-imports a target, as megatron's modules do
from mindspeed_llm.core.pipeline_parallel.schedules import deallocate_output_tensor  # noqa: F401
