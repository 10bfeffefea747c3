"""transformers' ``PretrainedConfig`` on MSAdapter: a config holding a dtype can be written and printed.

transformers 4.56+ (MindSpeed-LLM 2.2.0 pins 4.57.1) turns a config's ``dtype`` into its name with
``str(dtype).split(".")[1]``: PyTorch's ``str(torch.float32)`` is ``"torch.float32"``, MSAdapter's (MindSpore's
``Float32``) has no dot, so ``IndexError: list index out of range``. ``from_pretrained`` logs the config on the
way (``logger.info(f"Model config {config}")``), so every HF model load failed on MindSpore: MindSpeed-LLM's
``convert_ckpt.py`` (HF -> Megatron) stopped before reading a weight. MindSpeed-LLM's own fix replaces the method's
pre-4.56 name ``dict_torch_dtype_to_str``, which 4.57.1 no longer has.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["dtype_name", "dict_dtype_to_str_wrapper"]

PURPOSE = ("transformers 4.56+ names a config's dtype with str(dtype).split('.')[1]; MindSpore's 'Float32' has no "
           "dot (IndexError): every from_pretrained (it logs the config) failed, MindSpeed-LLM's convert_ckpt.py too")


def dtype_name(dtype: Any) -> str:
    """Return PyTorch's name of ``dtype`` (``"float32"`` for ``torch.float32``, PyTorch's or MSAdapter's)."""
    text = str(dtype)
    return text.rsplit(".", 1)[-1] if "." in text else text.lower()


def _names_in_place(d: dict[str, Any]) -> None:
    value = d.get("dtype")
    if isinstance(value, dict):
        d["dtype"] = {key: item if isinstance(item, str) else dtype_name(item) for key, item in value.items()}
    elif value is not None and not isinstance(value, (str, int)):
        d["dtype"] = dtype_name(value)
    for item in d.values():
        if isinstance(item, dict):
            _names_in_place(item)


def dict_dtype_to_str_wrapper(convert: Callable[..., Any]) -> Callable[..., Any]:
    """Name every dtype of the dictionary (nested ones too) as PyTorch does before ``convert`` sees it.

    Args:
        convert: ``transformers.configuration_utils.PretrainedConfig.dict_dtype_to_str``.

    Returns:
        ``convert`` whose dictionary holds ``"float32"`` where it held a dtype object: what the method writes on
        PyTorch (the config's JSON is the same on both backends).
    """

    @functools.wraps(convert)
    def dict_dtype_to_str(self: Any, d: dict[str, Any]) -> None:
        _names_in_place(d)
        return convert(self, d)

    return dict_dtype_to_str
