"""mindspeed_ms.compat.histograms: PyTorch's histc rule on the host (the conformance cases, tests/conformance/cases/
ops_histograms.py, compare the patched torch.histc/bincount with real PyTorch), and the integer inputs the field
counts on Ascend, which PyTorch's CPU refuses."""

from __future__ import annotations

import numpy as np
import pytest

from mindspeed_ms.compat import histograms
from mindspeed_ms.compat.errors import TorchRefusalError


def test_expert_ids_of_any_integer_type_are_counted_in_their_dtype() -> None:
    for dtype in (np.int64, np.int32):
        result = histograms.counts(np.array([0, 3, 3, 1, 7, 7, 7, 2], dtype), 8, 0, 8)
        assert result.dtype == dtype
        assert result.tolist() == [1, 1, 1, 2, 0, 0, 0, 3]


def test_the_last_bin_takes_the_maximum_and_nan_and_outsiders_are_skipped() -> None:
    values = np.array([0.0, 1.0, 3.0, 3.0, np.nan, -0.5, 3.5], np.float32)
    assert histograms.counts(values, 3, 0, 3).tolist() == [1.0, 1.0, 2.0]


def test_position_is_computed_as_pytorch_orders_it() -> None:
    # x = 0.1 of [0, 0.3] in 3 bins (float32): (x - min) * bins / (max - min) gives 1.0 (bin 1, PyTorch's);
    # (x - min) / (max - min) * bins gives 0.99999994 (bin 0)
    x, high = np.float32(0.1), np.float32(0.3)
    assert int(x / high * np.float32(3)) == 0
    assert histograms.counts(np.array([x], np.float32), 3, 0, float(high)).tolist() == [0.0, 1.0, 0.0]


def test_default_range_is_the_datas_and_widened_by_one_when_flat() -> None:
    assert histograms.counts(np.array([1.0, 2.0, 2.0, 5.0], np.float32), 4, 0, 0).tolist() == [1.0, 2.0, 0.0, 1.0]
    assert histograms.counts(np.array([2.0, 2.0], np.float32), 4, 0, 0).tolist() == [0.0, 0.0, 2.0, 0.0]
    assert histograms.counts(np.zeros(0, np.float32), 3, 0, 0).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(("bins", "low", "high", "message"), [
    (0, 0, 1, "bins must be > 0, but got 0"), (2, 0, float("inf"), "range of [0, inf] is not finite"),
    (2, 3, 1, "max must be larger than min"),
])
def test_refusals_are_pytorchs_runtime_errors(bins: int, low: float, high: float, message: str) -> None:
    with pytest.raises(TorchRefusalError, match=message.replace("[", r"\[").replace("]", r"\]")) as caught:
        histograms.counts(np.array([1.0, 2.0], np.float32), bins, low, high)
    assert isinstance(caught.value, RuntimeError)
