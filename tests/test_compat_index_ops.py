"""Argument checks of mindspeed_ms.compat.index_ops on real MindSpore tensors: an error leaves ``self`` untouched.

The values and the write through views are compared with real PyTorch by the conformance suite
(tests/conformance/cases/ops_index.py, ops_inplace.py, ops_misc.py, ops_nn.py)."""

from __future__ import annotations

import numpy as np
import pytest

mindspore = pytest.importorskip("mindspore")

from mindspeed_ms.compat import index_ops  # noqa: E402
from mindspeed_ms.compat.inplace_checks import InPlaceWriteError  # noqa: E402


def _tensor() -> object:
    return mindspore.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))


def test_index_put_out_of_range_raises_index_error_and_writes_nothing() -> None:
    x = _tensor()
    with pytest.raises(index_ops.IndexOutOfRangeError, match="index 5 is out of bounds for dimension 0 with size 2") \
            as caught:
        index_ops.index_put_(x, (mindspore.tensor([0, 5], mindspore.int64),), mindspore.tensor(1.0))
    assert isinstance(caught.value, IndexError)
    assert (caught.value.index, caught.value.size) == (5, 2)
    np.testing.assert_array_equal(x.asnumpy(), np.arange(6).reshape(2, 3))


def test_index_copy_out_of_range_writes_nothing() -> None:
    x = _tensor()
    with pytest.raises(index_ops.IndexOutOfRangeError):
        index_ops.index_copy_(x, 0, mindspore.tensor([0, 2], mindspore.int64),
                              mindspore.tensor(np.ones((2, 3), np.float32)))
    np.testing.assert_array_equal(x.asnumpy(), np.arange(6).reshape(2, 3))


def test_index_put_accepts_negative_indices() -> None:
    out = index_ops.index_put(_tensor(), (mindspore.tensor([-1], mindspore.int64),), mindspore.tensor(9.0))
    np.testing.assert_array_equal(out.asnumpy(), [[0, 1, 2], [9, 9, 9]])


def test_index_copy_with_int32_index_raises_like_pytorch() -> None:
    with pytest.raises(InPlaceWriteError, match="Expected a long tensor for index"):
        index_ops.index_copy(_tensor(), 0, mindspore.tensor([1], mindspore.int32), mindspore.tensor(np.ones((1, 3),
                                                                                                           np.float32)))


def test_scatter_add_out_of_range_raises_before_writing() -> None:
    x = _tensor()
    with pytest.raises(InPlaceWriteError, match="index 2 is out of bounds for dimension 0 with size 2"):
        index_ops.scatter_add_(x, 0, mindspore.tensor([[2, 0, 0]], mindspore.int64),
                               mindspore.tensor(np.ones((1, 3), np.float32)))
    np.testing.assert_array_equal(x.asnumpy(), np.arange(6).reshape(2, 3))


def test_scatter_add_accumulates_duplicate_indices() -> None:
    out = index_ops.scatter_add(_tensor(), 0, mindspore.tensor([[1, 1, 0]], mindspore.int64),
                                mindspore.tensor(np.ones((1, 3), np.float32)))
    np.testing.assert_array_equal(out.asnumpy(), [[0, 1, 3], [4, 5, 5]])


def test_bitwise_not_of_float_raises() -> None:
    with pytest.raises(InPlaceWriteError, match="bitwise_not"):
        index_ops.bitwise_not_(_tensor())


def test_uniform_with_from_above_to_raises() -> None:
    with pytest.raises(InPlaceWriteError, match="from=3.0 > to=2.0"):
        index_ops.uniform_(_tensor(), 3.0, 2.0)
