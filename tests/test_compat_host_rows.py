"""mindspeed_ms.compat._host_rows (optional C) through host_arithmetic and host_kernels: the layer norm's forward and
backward give the bits of the NumPy path that runs without the extension (float64 moments and sums, rounded once:
the mean and variance within half a unit of the exact ones), the bias add, the column sums and the scale give NumPy's
bits, the sum of squares is within float64 rounding of the exact sum; one thread and two give the same bits; buffers
it does not take (other dtypes, strided, overlapping) go to NumPy. tests/test_compat_host_layer_norm.py compares both
paths of the layer norm with real PyTorch."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from mindspeed_ms.compat import host_arithmetic, host_kernels


def test_the_row_loops_are_built_by_the_install() -> None:
    assert host_arithmetic.ROWS_ACCELERATED, \
        "mindspeed_ms.compat._host_rows is missing: pip install -e . needs a C compiler"


def test_one_thread_is_the_default() -> None:
    previous = host_arithmetic.set_row_threads(2)
    try:
        assert previous == 1
        assert host_arithmetic.set_row_threads(2) == 2
    finally:
        host_arithmetic.set_row_threads(previous)


@pytest.fixture(params=[1, 2], ids=["one thread", "two threads"])
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = host_arithmetic.set_row_threads(request.param)
    yield request.param
    host_arithmetic.set_row_threads(previous)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """The same bits but for NaNs' signs and payloads (any NaN where the other has one)."""
    nan = np.isnan(a)
    return a.shape == b.shape and np.array_equal(nan, np.isnan(b)) and _same_bits(a[~nan], b[~nan])


def _rows_of(shape: tuple[int, int], seed: int, offset: float = 1.5) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 3 + offset).astype(np.float32)


_SHAPES = [(512, 512), (64, 1000), (33, 37), (3, 8), (1, 5)]
_AFFINE = ["weight and bias", "weight", "bias", "neither"]


def _affine(kind: str, n: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    rng = np.random.default_rng(n)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return (w if "weight" in kind else None), (b if "bias" in kind else None)


@pytest.mark.parametrize("shape", _SHAPES, ids=str)
@pytest.mark.parametrize("affine", _AFFINE)
def test_layer_norm_has_the_numpy_paths_bits(shape: tuple[int, int], affine: str, threads: int) -> None:
    x, g = _rows_of(shape, 0), _rows_of(shape, 1, 0.0)
    weight, bias = _affine(affine, shape[1])
    y, mean, rstd = host_arithmetic.layer_norm_forward(x, weight, bias, 1e-5)
    y2, mean2, rstd2 = host_arithmetic.numpy_layer_norm_forward(x, weight, bias, 1e-5)
    assert _same_bits(y, y2)
    assert _same_bits(mean, mean2)
    assert _same_bits(rstd, rstd2)
    need = (weight is not None, bias is not None)
    dx, dw, db = host_arithmetic.layer_norm_backward(g, x, mean, rstd, weight, *need)
    dx2, dw2, db2 = host_arithmetic.numpy_layer_norm_backward(g, x, mean, rstd, weight, *need)
    assert _same_bits(dx, dx2)
    for got, expected in ((dw, dw2), (db, db2)):
        assert (got is None and expected is None) or _same_bits(got, expected)


def test_the_moments_are_the_exact_ones_rounded_once() -> None:
    x = _rows_of((256, 512), 2, offset=1000.0)  # a large mean: float32 accumulation loses digits there
    _, mean, rstd = host_arithmetic.layer_norm_forward(x, None, None, 0.0)
    wide = x.astype(np.float64)
    exact_mean = wide.mean(axis=1, keepdims=True)
    exact_variance = ((wide - exact_mean) ** 2).mean(axis=1, keepdims=True)
    assert np.abs(mean - exact_mean).max() <= (np.spacing(np.abs(mean)) / 2).max()
    variance = exact_variance.astype(np.float32)  # rounded once, then PyTorch's float32 1 / sqrt
    assert _same_bits(rstd, np.float32(1.0) / np.sqrt(variance))


def test_layer_norm_edge_rows(threads: int) -> None:
    x = _rows_of((4, 300), 3)
    x[0] = 3.0  # constant: variance 0, rstd 1 / sqrt(eps)
    x[1, 5] = np.inf
    x[2, 7] = np.nan
    x[3] *= np.float32(1e19)  # a variance beyond float32's range: inf, rstd 0
    y, mean, rstd = host_arithmetic.layer_norm_forward(x, None, None, 1e-5)
    y2, mean2, rstd2 = host_arithmetic.numpy_layer_norm_forward(x, None, None, 1e-5)
    assert _same_values(y, y2)
    assert _same_values(mean, mean2)
    assert _same_values(rstd, rstd2)
    assert (y[0] == 0).all()
    assert np.isnan(y[1:3]).all()
    assert rstd[3, 0] == 0


def test_row_loops_give_numpys_bits(threads: int) -> None:
    values, bias = _rows_of((512, 2048), 4), _rows_of((1, 2048), 5).reshape(2048)
    out = np.full_like(values, np.nan)
    host_arithmetic.bias_add(values, bias, out)
    assert _same_bits(out, np.add(values, bias))
    sums = np.full(2048, np.nan, np.float32)
    host_arithmetic.column_sum(values, sums)
    assert _same_bits(sums, np.add.reduce(values, axis=0, dtype=np.float64).astype(np.float32))
    scaled = values.reshape(-1).copy()
    host_kernels.scale(scaled, np.float32(0.37))
    assert _same_bits(scaled, values.reshape(-1) * np.float32(0.37))


@pytest.mark.parametrize("length", [6_400_037, 131_072, 1000, 0])
def test_the_sum_of_squares_is_the_float64_one(length: int, threads: int) -> None:
    values = np.random.default_rng(6).standard_normal(length).astype(np.float32) * np.float32(1e-3)
    total = host_arithmetic.sum_of_squares(values)
    wide = values.astype(np.float64)
    exact = math.fsum(wide * wide)
    assert abs(total - exact) <= exact * 1e-13
    assert abs(total - exact) <= abs(host_arithmetic.ROW * 2.0 ** -24 * exact) + 0.0


def test_two_threads_give_one_threads_bits() -> None:
    x, g = _rows_of((512, 512), 7), _rows_of((512, 512), 8, 0.0)
    weight, bias = _affine("weight and bias", 512)
    big = np.random.default_rng(9).standard_normal(3_000_001).astype(np.float32)
    results = []
    for count in (1, 2):
        previous = host_arithmetic.set_row_threads(count)
        try:
            y, mean, rstd = host_arithmetic.layer_norm_forward(x, weight, bias, 1e-5)
            dx, dw, db = host_arithmetic.layer_norm_backward(g, x, mean, rstd, weight, True, True)
            sums = np.empty(512, np.float32)
            host_arithmetic.column_sum(g, sums)
            results.append((y, mean, rstd, dx, dw, db, sums, np.array([host_arithmetic.sum_of_squares(big)])))
        finally:
            host_arithmetic.set_row_threads(previous)
    for one, two in zip(*results):
        assert np.array_equal(np.asarray(one).view(np.uint8), np.asarray(two).view(np.uint8))


def test_buffers_it_does_not_take_go_to_numpy() -> None:
    x = _rows_of((16, 64), 10)
    with pytest.raises(ValueError, match="1 or 2"):
        host_arithmetic.set_row_threads(3)
    half = x.astype(np.float16)
    host_kernels.scale(half, np.float16(0.5))
    assert np.array_equal(half, x.astype(np.float16) * np.float16(0.5))
    strided, sums = x[:, ::2], np.empty(32, np.float32)
    host_arithmetic.column_sum(strided, sums)
    assert _same_bits(sums, np.add.reduce(strided, axis=0, dtype=np.float64).astype(np.float32))
    out = np.empty((16, 32), np.float32)
    host_arithmetic.bias_add(strided, x[0, :32], out)
    assert _same_bits(out, strided + x[0, :32])
    wide = x.astype(np.float64).reshape(-1)
    assert host_arithmetic.sum_of_squares(wide) == pytest.approx(math.fsum(wide * wide), rel=1e-6)
    in_place = x.copy()  # the forward's output over its input: NumPy's operations, not the C loop
    y, mean, rstd = host_arithmetic.layer_norm_forward(in_place, None, None, 1e-5, in_place)
    expected, _, _ = host_arithmetic.numpy_layer_norm_forward(x, None, None, 1e-5)
    assert y is in_place
    assert _same_bits(y, expected)
