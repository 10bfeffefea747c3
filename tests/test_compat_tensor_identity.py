"""Conversions without change return the tensor itself; cat promotes (mindspeed_ms.compat.tensor_identity).
The conformance cases (fix_identity) compare the same with real PyTorch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mindspeed_ms.compat.tensor_identity import cat_promotion_wrapper, identity_cpu_wrapper, identity_to_wrapper


@dataclass
class DTypedTensor:
    """A tensor as the wrappers see it: a dtype name, a shape, an item size."""

    dtype: str
    shape: tuple[int, ...] = (2,)
    itemsize: int = 4

    def astype(self, dtype: str) -> DTypedTensor:
        return DTypedTensor(dtype, self.shape, 8 if dtype.endswith("64") else 4)


def _to(self: DTypedTensor, dtype: str | None = None, **kwargs: Any) -> DTypedTensor:
    return DTypedTensor(dtype or self.dtype, self.shape, self.itemsize)  # always a copy, as MSAdapter's


def test_to_without_a_change_returns_the_tensor_itself() -> None:
    x = DTypedTensor("Float32")
    to = identity_to_wrapper(_to)
    assert to(x, "Float32") is x
    assert to(x) is x


def test_to_with_a_change_or_copy_true_returns_the_copy() -> None:
    x = DTypedTensor("Float32")
    to = identity_to_wrapper(_to)
    assert to(x, "Float16").dtype == "Float16"
    assert to(x, "Float32", copy=True) is not x


def test_cpu_returns_the_tensor_itself() -> None:
    x = DTypedTensor("Int64")
    assert identity_cpu_wrapper(lambda self: DTypedTensor(self.dtype))(x) is x


def test_cat_casts_every_input_to_the_highest_category_then_widest_dtype() -> None:
    seen: list = []
    cat = cat_promotion_wrapper(lambda tensors, dim=0: seen.append([t.dtype for t in tensors]))
    cat([DTypedTensor("Int64", itemsize=8), DTypedTensor("Float32")])
    cat([DTypedTensor("Int32"), DTypedTensor("Int64", itemsize=8)])
    cat([DTypedTensor("Float32"), DTypedTensor("Float32")])
    assert seen == [["Float32", "Float32"], ["Int64", "Int64"], ["Float32", "Float32"]]
