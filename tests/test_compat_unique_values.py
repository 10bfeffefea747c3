"""mindspeed_ms.compat.unique_values: PyTorch's unique on the host (the conformance cases, tests/conformance/cases/
ops_unique.py, compare the patched torch.unique with real PyTorch)."""

from __future__ import annotations

import numpy as np

from mindspeed_ms.compat import unique_values


def test_values_sorted_inverse_in_the_inputs_shape_and_counts() -> None:
    found, inverse, counts = unique_values.unique(np.array([[3, 0, 2], [2, 3, 3]], np.int32))
    assert found.tolist() == [0, 2, 3]
    assert found.dtype == np.int32
    assert inverse.tolist() == [[2, 0, 1], [1, 2, 2]]
    assert inverse.dtype == counts.dtype == np.int64
    assert counts.tolist() == [1, 2, 3]


def test_each_nan_is_its_own_entry_after_the_numbers() -> None:
    found, _, counts = unique_values.unique(np.array([np.nan, 1.0, np.nan], np.float32))
    assert found[0] == 1.0
    assert np.isnan(found[1:]).all()
    assert counts.tolist() == [1, 1, 1]


def test_along_a_dim_slices_are_sorted_and_indexed() -> None:
    found, inverse, counts = unique_values.unique(np.array([[1, 2], [0, 5], [1, 2]]), dim=0)
    assert found.tolist() == [[0, 5], [1, 2]]
    assert inverse.tolist() == [1, 0, 1]
    assert counts.tolist() == [1, 2]
