"""``safetensors.torch.save_file`` on MSAdapter: HF weights save on MindSpore.

safetensors 0.8's ``torch`` writer describes each tensor by ``str(tensor.dtype)`` with the ``torch.`` prefix cut:
MSAdapter's dtype prints ``Float32``, so ``SafetensorError: Unknown dtype "Float32"`` and transformers'
``save_pretrained`` (MindSpeed-LLM's ``convert_ckpt.py --save-model-type hf``, Megatron -> HF) wrote no weights.
The replacement writes through safetensors' ``numpy`` framework: the same names, metadata, dtypes, shapes and bytes.
Each tensor is read from a copy (a tensor whose ``.data`` was set to a view of a buffer reads that buffer from
offset 0 on the host under MSAdapter). A dtype numpy has no type for (bfloat16, float8) is a typed error, not a
silent cast.
"""

from __future__ import annotations

import functools
from typing import Any

from mindspeed_ms.compat.errors import UnsupportedOpOptionError
from mindspeed_ms.compat.transformers_config import dtype_name

__all__ = ["PURPOSE", "save_file_wrapper"]

PURPOSE = ("safetensors' torch writer names dtypes by str(tensor.dtype); MSAdapter's 'Float32' is unknown to it "
           "(SafetensorError): transformers' save_pretrained wrote no weights on MindSpore")
#: the dtypes numpy holds, by PyTorch's names
_NUMPY = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")


def _to_numpy(name: str, tensor: Any, filename: Any) -> Any:
    import numpy as np

    dtype = dtype_name(tensor.dtype)
    if dtype not in _NUMPY:
        raise UnsupportedOpOptionError(
            "safetensors.torch.save_file", f"dtype {dtype}",
            f"not writable on MindSpore ({filename}: tensor {name!r}): mindspeed_ms writes safetensors through numpy, "
            f"which has no {dtype}; save in float32 or float16 (model.to(torch.float32).save_pretrained(...))")
    return np.ascontiguousarray(tensor.detach().clone().numpy())


def save_file_wrapper(original: Any) -> Any:
    """Return ``safetensors.torch.save_file`` that writes MSAdapter's tensors.

    Args:
        original: safetensors' ``torch.save_file`` (unused: its dtype lookup is what fails).

    Returns:
        ``save_file(tensors, filename, metadata=None)`` writing the tensors through ``safetensors.numpy``.
    """

    @functools.wraps(original)
    def save_file(tensors: dict[str, Any], filename: Any, metadata: dict[str, str] | None = None) -> None:
        from safetensors.numpy import save_file as save_numpy

        arrays = {name: _to_numpy(name, tensor, filename) for name, tensor in tensors.items()}
        save_numpy(arrays, filename, metadata=metadata)

    return save_file
