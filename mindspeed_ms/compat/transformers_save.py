"""transformers' ``save_pretrained`` on MSAdapter: the dtype it writes into the config is named as on PyTorch.

transformers 4.57.1 (MindSpeed-LLM 2.2.0's pin) ``PreTrainedModel.save_pretrained`` records the model's dtype with
``str(get_parameter_dtype(model)).split(".")[1]``: PyTorch's ``str(torch.float32)`` is ``"torch.float32"``,
MSAdapter's (MindSpore's ``Float32``) has no dot, so ``IndexError`` and no HF model could be saved on MindSpore
(MindSpeed-LLM's ``convert_ckpt.py --save-model-type hf``, Megatron -> HF). ``str`` of MindSpore's dtypes cannot
change (MSAdapter's own ``Tensor.type()`` looks dtypes up by it). So for the duration of the call the module's
``get_parameter_dtype`` answers a stand-in of the dtype that prints PyTorch's name and is the dtype in every other
respect (equality, hash, attributes); ``save_pretrained`` uses that value only for the name.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable

from mindspeed_ms.compat.transformers_config import dtype_name

__all__ = ["PURPOSE", "TorchNamedDtype", "save_pretrained_wrapper"]

PURPOSE = ("transformers 4.56+'s save_pretrained names the model's dtype with str(dtype).split('.')[1]; MindSpore's "
           "'Float32' has no dot (IndexError): no HF model could be saved, MindSpeed-LLM's convert_ckpt.py "
           "--save-model-type hf neither")

_SWAP = threading.RLock()


class TorchNamedDtype:
    """``dtype`` that prints as PyTorch's (``torch.float32``) and is ``dtype`` otherwise."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def __str__(self) -> str:
        return f"torch.{dtype_name(self.dtype)}"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return bool(self.dtype == (other.dtype if isinstance(other, TorchNamedDtype) else other))

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dtype, name)


def save_pretrained_wrapper(save: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``PreTrainedModel.save_pretrained``: its module's ``get_parameter_dtype`` names dtypes as PyTorch.

    Args:
        save: ``transformers.modeling_utils.PreTrainedModel.save_pretrained``.

    Returns:
        ``save`` run with ``get_parameter_dtype`` answering :class:`TorchNamedDtype` (restored afterwards, also on
        error), so the config's ``dtype`` is ``"float32"`` as on PyTorch.
    """

    @functools.wraps(save)
    def save_pretrained(self: Any, *args: Any, **kwargs: Any) -> Any:
        module: Any = sys.modules[save.__module__]
        original = getattr(module, "get_parameter_dtype", None)
        if original is None:  # another transformers layout: nothing to name
            return save(self, *args, **kwargs)

        def get_parameter_dtype(parameter: Any) -> Any:
            return TorchNamedDtype(original(parameter))

        with _SWAP:
            module.get_parameter_dtype = get_parameter_dtype
            try:
                return save(self, *args, **kwargs)
            finally:
                module.get_parameter_dtype = original

    return save_pretrained
