"""``safetensors.safe_open(..., framework="pt")`` on MSAdapter: HF weights load on MindSpore.

safetensors' ``pt`` framework builds its tensors through PyTorch's storage API (``torch.UntypedStorage``), which
MSAdapter does not have: ``AttributeError: Module 'msadapter' has no attribute 'UntypedStorage'`` at the first
``safe_open``, so transformers' ``from_pretrained`` of a ``.safetensors`` checkpoint failed on MindSpore
(MindSpeed-LLM's ``convert_ckpt.py`` HF -> Megatron stopped there). The replacement opens the file with
safetensors' ``numpy`` framework and hands out ``torch.from_numpy`` tensors: the same names, metadata, dtypes,
shapes and bytes. A dtype numpy has no type for (bfloat16, float8) is a typed error, not a silent cast.
"""

from __future__ import annotations

import functools
from typing import Any

from mindspeed_ms.compat.errors import UnsupportedOpOptionError

__all__ = ["safe_open_wrapper", "PURPOSE"]

PURPOSE = ("safetensors' framework='pt' builds tensors with torch.UntypedStorage, which MSAdapter lacks "
           "(AttributeError at the first safe_open): transformers' from_pretrained of .safetensors failed on MindSpore")
#: safetensors dtype names numpy can hold (the others: BF16, F8_*)
_NUMPY_DTYPES = ("F64", "F32", "F16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL")


def _to_torch(array: Any) -> Any:
    import numpy as np
    import torch

    return torch.from_numpy(np.ascontiguousarray(array).copy())


def _check_dtype(filename: str, name: str, dtype: str) -> None:
    if dtype not in _NUMPY_DTYPES:
        raise UnsupportedOpOptionError(
            "safetensors.safe_open", f"dtype {dtype}",
            f"not readable on MindSpore ({filename}: tensor {name!r}): mindspeed_ms reads safetensors through numpy, "
            f"which has no {dtype}; save the checkpoint in float32 or float16 (model.to(torch.float32)"
            f".save_pretrained(...))")


class _Slice:
    """``PySafeSlice`` of the ``pt`` framework: dtype and shape without reading, indexing gives a tensor."""

    def __init__(self, inner: Any, filename: str, name: str) -> None:
        self._inner, self._filename, self._name = inner, filename, name

    def get_dtype(self) -> str:
        return str(self._inner.get_dtype())

    def get_shape(self) -> list[int]:
        return list(self._inner.get_shape())

    def __getitem__(self, index: Any) -> Any:
        _check_dtype(self._filename, self._name, self.get_dtype())
        return _to_torch(self._inner[index])


class _TorchFile:
    """A ``safe_open`` handle of the ``pt`` framework over one of the ``numpy`` framework."""

    def __init__(self, inner: Any, filename: str) -> None:
        self._inner, self._filename = inner, filename

    def __enter__(self) -> _TorchFile:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> Any:
        return self._inner.__exit__(*exc_info)

    def keys(self) -> list[str]:
        return list(self._inner.keys())

    def offset_keys(self) -> list[str]:
        return list(self._inner.offset_keys())

    def metadata(self) -> Any:
        return self._inner.metadata()

    def get_slice(self, name: str) -> _Slice:
        return _Slice(self._inner.get_slice(name), self._filename, name)

    def get_tensors(self) -> dict[str, Any]:
        return {name: self.get_tensor(name) for name in self.keys()}

    def get_tensor(self, name: str) -> Any:
        _check_dtype(self._filename, name, str(self._inner.get_slice(name).get_dtype()))
        return _to_torch(self._inner.get_tensor(name))


def safe_open_wrapper(original: Any) -> Any:
    """Return ``safetensors.safe_open`` whose ``framework="pt"`` works on MSAdapter.

    Args:
        original: safetensors' ``safe_open`` (its Rust class).

    Returns:
        A ``safe_open(filename, framework, device="cpu", **options)`` (options: the original's, e.g. safetensors
        0.8's ``backend``): for ``"pt"`` a handle (usable with or without ``with``,
        as the original's) giving this torch's tensors read through ``original``'s numpy framework (the CPU is the
        only device here); any other framework is ``original``'s, unchanged.
    """

    @functools.wraps(original)
    def safe_open(filename: Any, framework: str, device: Any = "cpu", **options: Any) -> Any:
        if framework not in ("pt", "torch"):
            return original(filename, framework=framework, device=device, **options)
        return _TorchFile(original(filename, framework="numpy", **options), str(filename))

    return safe_open
