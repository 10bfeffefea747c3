"""mindspeed_ms.compat.special_dtypes on real MindSpore tensors (values against real PyTorch:
tests/conformance/cases/ops_special_reduce.py)."""

from __future__ import annotations

import numpy as np
import pytest

mindspore = pytest.importorskip("mindspore")

from mindspore import ops  # noqa: E402

from mindspeed_ms.compat import special_dtypes  # noqa: E402


def _sum(x: object, dim: object = None, keepdim: bool = False) -> object:
    return ops.sum(x, dim, keepdim)


def test_int64_sums_are_exact_past_2_53_over_any_dims() -> None:
    summed = special_dtypes.exact_int64_sum_wrapper(_sum)
    big = 2**53
    x = mindspore.tensor(np.array([[[big, 1], [1, 1]], [[big, 0], [0, 1]]], np.int64))
    assert int(summed(x)) == 2 * big + 4
    assert summed(x, (0, 2)).asnumpy().tolist() == [2 * big + 1, 3]
    assert summed(x, 1, True).shape == (2, 1, 2)
    assert summed(x, dim=-1).asnumpy().tolist() == [[big + 1, 2], [big, 1]]


def test_int64_sums_wrap_like_pytorch() -> None:
    summed = special_dtypes.exact_int64_sum_wrapper(_sum)
    assert int(summed(mindspore.tensor(np.array([2**62, 2**62], np.int64)))) == -(2**63)


def test_float16_cumsum_accumulates_in_float32() -> None:
    cumsum = special_dtypes.float32_cumsum_wrapper(lambda x, dim, **kw: ops.cumsum(x, dim, **kw))
    x = mindspore.tensor(np.array([60000.0, 60000.0, -60000.0], np.float16))
    out = cumsum(x, 0)
    assert out.dtype == mindspore.float16
    assert out.asnumpy().tolist() == [60000.0, np.inf, 60000.0]


def test_any_all_of_floats_and_empty_tensors() -> None:
    any_ = special_dtypes.truth_wrapper("any")(lambda x, *a, **k: ops.any(x, *a, **k))
    all_ = special_dtypes.truth_wrapper("all")(lambda x, *a, **k: ops.all(x, *a, **k))
    zeros = mindspore.tensor(np.array([-0.0, 0.0], np.float32))
    assert not bool(any_(zeros))
    assert any_(zeros).dtype == mindspore.bool_
    empty = ops.zeros((2, 0), mindspore.float32)
    assert any_(empty, 1).asnumpy().tolist() == [False, False]
    assert all_(empty, 1).asnumpy().tolist() == [True, True]


def test_empty_prod_is_one_and_integer_cumprod_is_int64() -> None:
    prod = special_dtypes.empty_prod_wrapper(lambda x, *a, **k: ops.prod(x, *a, **k))
    assert prod(ops.zeros((2, 0), mindspore.int32), 1).asnumpy().tolist() == [1, 1]
    assert prod(ops.zeros((2, 0), mindspore.int32), 1).dtype == mindspore.int64
    cumprod = special_dtypes.integer_cumprod_wrapper(lambda x, dim, **k: ops.cumprod(x, dim, **k))
    out = cumprod(mindspore.tensor(np.array([100, 3], np.int8)), 0)
    assert out.dtype == mindspore.int64
    assert out.asnumpy().tolist() == [100, 300]


def test_an_integer_tensor_clamped_by_a_float_bound_is_float32() -> None:
    clamp = special_dtypes.integer_clamp_wrapper(lambda x, lo, hi: ops.clamp(x, lo, hi))
    out = clamp(mindspore.tensor(np.array([1, 5, 9], np.int64)), None, 4.5)
    assert out.dtype == mindspore.float32
    assert out.asnumpy().tolist() == [1.0, 4.5, 4.5]
    assert clamp(mindspore.tensor(np.array([1, 5], np.int64)), 0, 3).dtype == mindspore.int64


def test_a_python_int_past_int64_is_refused_with_overflow_error() -> None:
    from mindspeed_ms.compat.errors import OpOverflowRefusedError

    less = special_dtypes.int_overflow_wrapper("torch.lt")(lambda x, y: ops.less(x, y))
    x = mindspore.tensor(np.array([1, 2], np.int64))
    with pytest.raises(OpOverflowRefusedError) as caught:
        less(x, 2**64)
    assert isinstance(caught.value, OverflowError)
    assert isinstance(caught.value, RuntimeError)
    assert less(x, 2).asnumpy().tolist() == [True, False]

    def other_failure(x: object, y: object) -> object:
        raise RuntimeError("something else")

    with pytest.raises(RuntimeError, match="something else"):
        special_dtypes.int_overflow_wrapper("torch.lt")(other_failure)(x, 1)
