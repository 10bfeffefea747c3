"""mindspeed_ms.compat.special_values on real MindSpore tensors, around MindSpore's own nan-skipping kernels: what
the conformance cases (tests/conformance/cases/ops_special_reduce.py) do not reach: ``out=``, the untouched common
path, rows beside a +inf row, stable nan sorts."""

from __future__ import annotations

import math

import numpy as np
import pytest

mindspore = pytest.importorskip("mindspore")

from mindspore import mint, ops  # noqa: E402

from mindspeed_ms.compat import special_values  # noqa: E402
from mindspeed_ms.compat.return_types import return_type  # noqa: E402

NAN, INF = math.nan, math.inf


def _max_dim(input: object, dim: int, keepdim: bool = False) -> object:
    values, indices = ops.max(input, dim, keepdim)
    return return_type("max")((values, indices))


def _rows() -> object:
    return mindspore.tensor(np.array([[1.0, NAN, 3.0, NAN], [0.5, -1.0, 2.0, 2.0]], np.float32))


def test_max_over_a_dim_gives_nan_and_the_first_nans_index() -> None:
    values, indices = special_values.nan_extreme_wrapper("max")(_max_dim)(_rows(), 1)
    np.testing.assert_array_equal(values.asnumpy(), np.array([NAN, 2.0], np.float32))
    assert indices.asnumpy().tolist() == [1, 2]
    assert indices.dtype == mindspore.int64


def test_max_writes_into_out_and_keeps_rows_without_nan() -> None:
    out = (mint.zeros((2,), dtype=mindspore.float32), mint.zeros((2,), dtype=mindspore.int64))
    returned = special_values.nan_extreme_wrapper("max")(_max_dim)(_rows(), 1, out=out)
    assert returned is out
    assert np.isnan(out[0].asnumpy()[0])
    assert out[0].asnumpy()[1] == 2.0


def test_whole_tensor_max_and_binary_maximum_propagate_nan() -> None:
    whole = special_values.nan_extreme_wrapper("max")(lambda x: mint.max(x))(_rows())
    assert np.isnan(whole.asnumpy())
    a = mindspore.tensor(np.array([NAN, 1.0, -2.0], np.float32))
    b = mindspore.tensor(np.array([0.0, NAN, -3.0], np.float32))
    both = special_values.nan_extreme_wrapper("max")(lambda x, y: mint.maximum(x, y))(a, b).asnumpy()
    assert np.isnan(both[:2]).all()
    assert both[2] == -2.0


def test_argmax_points_at_the_first_nan() -> None:
    arg = special_values.nan_arg_wrapper(lambda x, dim=None, keepdim=False: ops.argmax(x, dim, keepdim))
    assert arg(_rows(), 1).asnumpy().tolist() == [1, 2]


def test_softmax_rows_beside_an_infinite_row_keep_their_values() -> None:
    softmax = special_values.softmax_rows_wrapper(lambda x, dim: ops.softmax(x, dim))
    x = mindspore.tensor(np.array([[1.0, INF, 0.0], [-INF, -INF, -INF], [1.0, 2.0, 3.0]], np.float32))
    out = softmax(x, 1).asnumpy()
    assert np.isnan(out[:2]).all()
    np.testing.assert_array_equal(out[2], ops.softmax(x[2:], 1).asnumpy()[0])


def test_softmax_without_infinities_is_the_kernels_result_bit_for_bit() -> None:
    x = mindspore.tensor(np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32))
    out = special_values.softmax_rows_wrapper(lambda t, dim: ops.softmax(t, dim))(x, -1)
    np.testing.assert_array_equal(out.asnumpy(), ops.softmax(x, -1).asnumpy())


def test_logsumexp_of_infinite_rows() -> None:
    lse = special_values.logsumexp_wrapper(lambda x, dim, keepdim=False: ops.logsumexp(x, dim, keepdim))
    x = mindspore.tensor(np.array([[-INF, -INF], [INF, 0.0], [NAN, 1.0], [0.0, 0.0]], np.float32))
    out = lse(x, 1).asnumpy()
    assert out[0] == -INF
    assert out[1] == INF
    assert np.isnan(out[2])
    assert out[3] == pytest.approx(math.log(2.0))


def test_sort_with_nan_is_stable_and_puts_nan_last_or_first() -> None:
    sort = special_values.nan_sort_wrapper("sort")(lambda x, dim=-1, descending=False: ops.sort(x, dim, descending))
    x = mindspore.tensor(np.array([2.0, NAN, 1.0, 2.0, NAN, -INF], np.float32))
    values, indices = sort(x)
    assert indices.asnumpy().tolist() == [5, 2, 0, 3, 1, 4]
    assert np.isnan(values.asnumpy()[4:]).all()
    _, down = sort(x, descending=True)
    assert down.asnumpy().tolist() == [1, 4, 0, 3, 2, 5]


def test_topk_takes_nan_as_the_largest() -> None:
    topk = special_values.nan_topk_wrapper(lambda x, k, dim=-1, largest=True, sorted=True: ops.topk(x, k, dim,
                                                                                                     largest, sorted))
    x = mindspore.tensor(np.array([[1.0, NAN, 3.0], [0.0, 5.0, 4.0]], np.float32))
    values, indices = topk(x, 2)
    assert indices.asnumpy().tolist() == [[1, 2], [1, 2]]
    assert np.isnan(values.asnumpy()[0, 0])


def test_clip_keeps_nan_and_promotes_an_integer_tensor_with_a_float_bound() -> None:
    clamp = special_values.nan_clamp_wrapper(lambda x, lo, hi: ops.clamp(x, lo, hi))
    out = clamp(mindspore.tensor(np.array([NAN, 5.0], np.float32)), 0.0, 1.0).asnumpy()
    assert np.isnan(out[0])
    assert out[1] == 1.0
    promoted = clamp(mindspore.tensor(np.array([1, 5], np.int64)), None, 4.5)
    assert promoted.dtype == mindspore.float32
    assert promoted.asnumpy().tolist() == [1.0, 4.5]
