"""mindspeed_ms.compat.index_bounds on real MindSpore tensors: PyTorch's class for an index outside the dim, checked
before the kernel runs (the conformance cases, tests/conformance/cases/ops_special_index.py, compare with PyTorch)."""

from __future__ import annotations

import numpy as np
import pytest

mindspore = pytest.importorskip("mindspore")

from mindspore import ops  # noqa: E402

from mindspeed_ms.compat import index_bounds  # noqa: E402
from mindspeed_ms.compat.errors import IndexBoundsError, IndexOutOfRangeError  # noqa: E402


def _x() -> object:
    return mindspore.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))


def _index(values: list) -> object:
    return mindspore.tensor(np.array(values, np.int64))


def test_gather_outside_the_dim_raises_runtime_error_with_the_index() -> None:
    gather = index_bounds.index_bounds_wrapper("gather")(lambda x, dim, index: ops.gather_elements(x, dim, index))
    for bad in (4, -1):
        with pytest.raises(IndexBoundsError, match=f"index {bad} is out of bounds for dimension 1 with size 4") \
                as caught:
            gather(_x(), 1, _index([[0], [bad], [1]]))
        assert isinstance(caught.value, RuntimeError)
        assert not isinstance(caught.value, IndexError)
    assert gather(_x(), 1, _index([[3], [0], [1]])).asnumpy().ravel().tolist() == [3.0, 4.0, 9.0]


def test_index_select_refuses_negatives_with_index_error() -> None:
    select = index_bounds.index_bounds_wrapper("index_select")(lambda x, dim, index: ops.index_select(x, dim, index))
    with pytest.raises(IndexOutOfRangeError) as caught:
        select(_x(), 0, _index([-1]))
    assert caught.value.size == 3
    assert select(_x(), 0, _index([])).shape == (0, 4)


def test_setitem_with_an_empty_index_writes_nothing_and_negatives_are_allowed() -> None:
    writes: list = []
    setitem = index_bounds.empty_index_setitem_wrapper(lambda self, key, value: writes.append((key, value)))
    x = _x()
    assert setitem(x, _index([]), 1.0) is None
    assert writes == []
    setitem(x, _index([-3, 2]), 1.0)
    assert len(writes) == 1
    with pytest.raises(IndexOutOfRangeError):
        setitem(x, _index([-4]), 1.0)
