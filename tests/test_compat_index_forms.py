"""mindspeed_ms.compat.index_forms on real MindSpore tensors: the index forms PyTorch reads that MindSpore's
``Tensor.__getitem__`` refuses or misreads, rewritten (the conformance cases, tests/conformance/cases/
ops_special_index.py, compare the results with PyTorch)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

mindspore = pytest.importorskip("mindspore")

from mindspeed_ms.compat import index_forms  # noqa: E402

GETITEM = index_forms.getitem_forms_wrapper(mindspore.Tensor.__getitem__)


def _x() -> Any:
    return mindspore.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))


def _values(tensor: Any) -> tuple[tuple[int, ...], list]:
    return tuple(tensor.shape), tensor.asnumpy().ravel().tolist()


def test_basic_indices_reach_getitem_unchanged() -> None:
    seen: list = []

    def record(self: Any, index: Any) -> str:
        seen.append(index)
        return "result"

    getitem = index_forms.getitem_forms_wrapper(record)
    x = _x()
    for index in (1, slice(0, 1), None, Ellipsis, (0, slice(None), None, Ellipsis), [0, 1],
                  mindspore.tensor(np.array([1, 0], np.int64)), mindspore.tensor(np.array([True, False]))):
        assert getitem(x, index) == "result"
        assert seen.pop() is index
    assert index_forms.normalized_index((0, slice(None)), (2, 3, 4)) is None


def test_empty_lists_select_nothing() -> None:
    assert _values(GETITEM(_x(), [])) == ((0, 3, 4), [])
    assert _values(GETITEM(_x(), (slice(None), []))) == ((2, 0, 4), [])
    assert _values(GETITEM(_x(), ([], 1))) == ((0, 4), [])


def test_uint8_masks_read_as_bool_masks_with_pytorchs_warning() -> None:
    mask = mindspore.tensor(np.array([0, 1], np.uint8))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shape, values = _values(GETITEM(_x(), mask))
    assert (shape, values[:4]) == ((1, 3, 4), [12.0, 13.0, 14.0, 15.0])
    assert [str(warning.message) for warning in caught] == [index_forms.UINT8_MASK_WARNING]


@pytest.mark.parametrize("index, shape", [
    (False, (0, 2, 3, 4)), (True, (1, 2, 3, 4)), ((Ellipsis, False), (2, 3, 4, 0)),
    ((0, False, slice(1, 3)), (0, 2, 4)),
    ((None, slice(None), False), (1, 2, 0, 3, 4)), ((True, slice(None), False), (0, 2, 3, 4)),
])
def test_scalar_booleans_are_new_dimensions_indexed_by_a_tensor(index: object, shape: tuple[int, ...]) -> None:
    assert tuple(GETITEM(_x(), index).shape) == shape


def test_zero_dim_bool_tensors_are_scalar_booleans_not_misread() -> None:
    false, true = mindspore.tensor(False), mindspore.tensor(True)
    assert tuple(GETITEM(_x(), (Ellipsis, false)).shape) == (2, 3, 4, 0)  # MindSpore alone: (2, 3) of zeros
    assert tuple(GETITEM(_x(), (false, None)).shape) == (0, 1, 2, 3, 4)  # MindSpore alone: (1,)
    assert _values(GETITEM(_x(), true)) == ((1, 2, 3, 4), list(range(24)))


def test_the_view_for_scalar_booleans_counts_masks_and_the_ellipsis() -> None:
    mask = mindspore.tensor(np.ones((2, 3), bool))
    rewritten = index_forms.normalized_index((mask, Ellipsis, True), (2, 3, 4))
    assert rewritten is not None
    view, index = rewritten
    assert view == (2, 3, 4, 1)
    assert index[0] is mask
    assert index[1] is Ellipsis
    assert index[2].asnumpy().tolist() == [0]
    assert index_forms.normalized_index((Ellipsis, False, 0), (2, 3, 4)) is not None
    assert index_forms.normalized_index((Ellipsis, False, 0), (2, 3, 4))[0] == (2, 3, 1, 4)  # type: ignore[index]
