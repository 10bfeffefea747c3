"""mindspeed_ms.compat.host_indices: int64 gather indices as int32 from the host, checked as PyTorch's embedding
checks them (the embedding's values and gradients against PyTorch: tests/conformance/cases/fix_msadapter_ops.py), and
the cross entropy backward's row operands (against megatron under PyTorch: tests/test_compat_megatron_core.py)."""

from __future__ import annotations

import mindspore
import numpy as np
import pytest

from mindspeed_ms.compat.errors import OpIndexRefusedError
from mindspeed_ms.compat.host_indices import int32_indices, picked_logits, row_operands, target_operands


def test_int64_indices_become_a_new_int32_tensor_of_the_same_values() -> None:
    ids = mindspore.Tensor(np.array([[5, 0, 5], [3, 5, 0]], np.int64))
    got = int32_indices(ids, 6, "embedding")
    assert got is not ids
    assert got.dtype == mindspore.int32
    np.testing.assert_array_equal(got.asnumpy(), [[5, 0, 5], [3, 5, 0]])
    np.testing.assert_array_equal(ids.asnumpy(), [[5, 0, 5], [3, 5, 0]])  # the input is left as it was
    # and the gather of either picks the same rows
    table = mindspore.Tensor(np.arange(24, dtype=np.float32).reshape(6, 4))
    np.testing.assert_array_equal(mindspore.ops.gather(table, got, 0).asnumpy(),
                                  mindspore.ops.gather(table, ids, 0).asnumpy())


def test_a_strided_view_of_indices_is_read_at_its_strides() -> None:
    ids = mindspore.Tensor(np.array([[1, 2], [3, 4], [0, 5]], np.int64)).transpose(1, 0)
    np.testing.assert_array_equal(int32_indices(ids, 6, "embedding").asnumpy(), [[1, 3, 0], [2, 4, 5]])


@pytest.mark.parametrize("bad", [-1, 6, 2 ** 32 + 1, -(2 ** 40)])
def test_an_index_outside_the_rows_raises_pytorchs_index_error(bad: int) -> None:
    ids = mindspore.Tensor(np.array([1, bad], np.int64))
    with pytest.raises(IndexError, match="index out of range in self") as caught:
        int32_indices(ids, 6, "torch.nn.functional.embedding")
    assert isinstance(caught.value, OpIndexRefusedError)
    assert caught.value.op == "torch.nn.functional.embedding"


@pytest.mark.parametrize("values", [np.array([1, 2], np.int32), np.zeros((0,), np.int64), np.array([1.0, 2.0])])
def test_other_dtypes_and_no_elements_are_handed_back_untouched(values: np.ndarray) -> None:
    ids = mindspore.Tensor(values)
    assert int32_indices(ids, 6, "embedding") is ids


def test_row_operands_are_the_row_numbers_and_one_minus_the_mask() -> None:
    mask = mindspore.Tensor(np.array([[True, False], [False, False], [True, True]]))
    arange, update = row_operands(mask, 6)
    assert arange.dtype == mindspore.int64
    assert update.dtype == mindspore.float32
    np.testing.assert_array_equal(arange.asnumpy(), np.arange(6))
    np.testing.assert_array_equal(update.asnumpy(), [0.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    # a strided mask is read at its strides
    _, strided = row_operands(mask.transpose(1, 0), 6)
    np.testing.assert_array_equal(strided.asnumpy(), [0.0, 1.0, 0.0, 1.0, 1.0, 0.0])


@pytest.mark.parametrize(("mask", "rows"), [(np.array([1, 0]), 2), (np.array([True, False]), 3),
                                            (np.zeros((0,), bool), 0)])
def test_row_operands_leave_other_masks_to_megatrons_operations(mask: np.ndarray, rows: int) -> None:
    assert row_operands(mindspore.Tensor(mask), rows) is None


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_target_operands_mask_the_ids_outside_the_partition_and_shift_the_others(dtype: type) -> None:
    ids = np.array([[3, 64, 127], [128, 70, -1]], dtype)
    mask, masked = target_operands(mindspore.Tensor(ids), 64, 128)
    assert mask.dtype == mindspore.bool_
    assert masked.dtype == mindspore.Tensor(ids).dtype
    expected_mask = (ids < 64) | (ids >= 128)
    np.testing.assert_array_equal(mask.asnumpy(), expected_mask)
    np.testing.assert_array_equal(masked.asnumpy(), np.where(expected_mask, 0, ids - 64))


def test_target_operands_leave_other_tensors_to_the_kernels() -> None:
    assert target_operands(mindspore.Tensor(np.array([1.0, 2.0])), 0, 4) is None
    assert target_operands(mindspore.Tensor(np.zeros((0,), np.int64)), 0, 4) is None


def test_picked_logits_copy_each_rows_target_and_zero_the_masked_rows() -> None:
    logits = np.array([[0.5, -0.0, 3.0], [np.nan, 1.0, -2.0], [-7.0, np.inf, 0.25]], np.float32)
    picked = picked_logits(mindspore.Tensor(logits), mindspore.Tensor(np.array([1, 0, 1], np.int64)),
                           mindspore.Tensor(np.array([False, False, True])))
    assert picked.dtype == mindspore.float32
    got = picked.asnumpy()
    np.testing.assert_array_equal(got, [-0.0, np.nan, 0.0])
    assert np.signbit(got[0])  # a copy: the -0.0 kept
    assert not np.signbit(got[2])  # masked: PyTorch's 0.0


@pytest.mark.parametrize(("logits", "index"), [(np.ones((2, 3), np.float16), [0, 1]),
                                               (np.ones((2, 3), np.float32), [0, 3])])
def test_picked_logits_leave_other_dtypes_and_wild_indices_to_the_kernels(logits: np.ndarray, index: list) -> None:
    assert picked_logits(mindspore.Tensor(logits), mindspore.Tensor(np.array(index, np.int64)),
                         mindspore.Tensor(np.array([False, False]))) is None
