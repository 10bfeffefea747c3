"""PyTorch's refusals of in-place writes (mindspeed_ms.compat.inplace_checks), on stand-in tensors that
describe only their memory layout and dtype; the conformance suite compares the same rules with real PyTorch."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mindspeed_ms.compat.inplace_checks import (
    BOOL,
    COMPLEX,
    FLOATING,
    INTEGRAL,
    InPlaceWriteError,
    category,
    check_inplace,
    check_no_internal_overlap,
    check_no_partial_overlap,
)


@dataclass
class LayoutTensor:
    """A tensor as the checks see it: dtype, shape, strides (elements) and address."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    address: int = 4096
    dtype: str = "Float32"
    itemsize: int = 4
    requires_grad: bool = False
    is_leaf: bool = True

    def stride(self) -> tuple[int, ...]:
        return self.strides

    def data_ptr(self) -> int:
        return self.address

    def numel(self) -> int:
        total = 1
        for size in self.shape:
            total *= size
        return total

    @property
    def nbytes(self) -> int:
        return self.numel() * self.itemsize

    def is_contiguous(self) -> bool:
        """Row-major strides (size-1 dimensions may have any stride), as torch.Tensor.is_contiguous."""
        expected = 1
        for size, stride in reversed(list(zip(self.shape, self.strides))):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def test_integer_self_with_float_result_raises_pytorchs_cast_message() -> None:
    with pytest.raises(InPlaceWriteError, match="result type Float can't be cast to the desired output type Long") \
            as caught:
        check_inplace("div_", LayoutTensor((3,), (1,), dtype="Int64", itemsize=8), 2, result_category=FLOATING)
    assert (caught.value.op, caught.value.rule) == ("div_", "cast")
    assert isinstance(caught.value, RuntimeError)


def test_float64_operand_names_double_and_bool_self_refuses_int() -> None:
    with pytest.raises(InPlaceWriteError, match="result type Double can't be cast to the desired output type Int"):
        check_inplace("add_", LayoutTensor((3,), (1,), dtype="Int32"), LayoutTensor((3,), (1,), 64, "Float64", 8))
    with pytest.raises(InPlaceWriteError, match="result type Long can't be cast to the desired output type Bool"):
        check_inplace("add_", LayoutTensor((3,), (1,), dtype="Bool", itemsize=1), 1)


def test_same_or_lower_category_operands_pass() -> None:
    check_inplace("mul_", LayoutTensor((3,), (1,)), 2, True, LayoutTensor((), (), 64, "Int64", 8))


def test_stride_zero_dimension_is_internal_overlap() -> None:
    with pytest.raises(InPlaceWriteError, match="more than one element of the written-to tensor") as caught:
        check_no_internal_overlap("copy_", LayoutTensor((4, 3), (0, 1)))
    assert caught.value.rule == "internal_overlap"
    check_no_internal_overlap("copy_", LayoutTensor((1, 3), (0, 1)))  # size-1 dimensions share nothing


def test_shifted_dense_ranges_overlap_partly_and_identical_ones_do_not() -> None:
    base = 4096
    with pytest.raises(InPlaceWriteError, match="some elements of the input tensor") as caught:
        check_no_partial_overlap("copy_", LayoutTensor((4,), (1,), base + 4), LayoutTensor((4,), (1,), base))
    assert caught.value.rule == "partial_overlap"
    check_no_partial_overlap("add_", LayoutTensor((4,), (1,), base), LayoutTensor((4,), (1,), base))
    check_no_partial_overlap("add_", LayoutTensor((3,), (1,), base), LayoutTensor((3,), (1,), base + 12))


def test_contiguous_ranges_that_meet_without_overlapping_pass_and_overlapping_ones_raise() -> None:
    check_no_partial_overlap("copy_", LayoutTensor((2, 3), (3, 1), 4096), LayoutTensor((2, 3), (3, 1), 4096 + 24))
    check_no_partial_overlap("copy_", LayoutTensor((2, 3), (3, 1), 4096 + 24), LayoutTensor((2, 3), (3, 1), 4096))
    with pytest.raises(InPlaceWriteError, match="some elements of the input tensor"):
        check_no_partial_overlap("copy_", LayoutTensor((2, 3), (3, 1), 4096), LayoutTensor((2, 3), (3, 1), 4096 + 20))
    with pytest.raises(InPlaceWriteError, match="some elements of the input tensor"):  # same range, other shape
        check_no_partial_overlap("copy_", LayoutTensor((2, 3), (3, 1)), LayoutTensor((3, 2), (2, 1)))


def test_same_range_with_other_strides_is_partial_and_non_dense_is_too_hard() -> None:
    with pytest.raises(InPlaceWriteError):
        check_no_partial_overlap("copy_", LayoutTensor((2, 2), (2, 1)), LayoutTensor((2, 2), (1, 2)))
    # a column slice is not dense: PyTorch does not try, neither do we
    check_no_partial_overlap("copy_", LayoutTensor((3, 2), (4, 1), 4100), LayoutTensor((3, 4), (4, 1)))


def test_broadcast_past_self_shape_raises() -> None:
    with pytest.raises(InPlaceWriteError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        check_inplace("add_", LayoutTensor((3,), (1,)), LayoutTensor((2, 3), (3, 1), 1 << 20))


def test_category_of_scalars_their_subclasses_and_dtypes_asked_twice() -> None:
    """Exact Python scalars by one lookup, subclasses (NumPy's float64, an IntEnum) by isinstance, dtypes by name;
    the second answer (from the per-dtype cache where it applies) is the first."""
    import enum

    import numpy as np

    class Level(enum.IntEnum):
        LOW = 1

    cases = [(True, BOOL), (3, INTEGRAL), (2.5, FLOATING), (1j, COMPLEX), (np.float64(2.0), FLOATING),
             (Level.LOW, INTEGRAL), (np.complex128(1j), COMPLEX), (LayoutTensor((3,), (1,), dtype="Int64"), INTEGRAL),
             (LayoutTensor((3,), (1,), dtype="UInt8"), INTEGRAL), (LayoutTensor((3,), (1,), dtype="Bool"), BOOL),
             (LayoutTensor((3,), (1,), dtype="Complex64"), COMPLEX), (LayoutTensor((3,), (1,)), FLOATING)]
    for value, expected in cases:
        assert (category(value), category(value)) == (expected, expected), value
