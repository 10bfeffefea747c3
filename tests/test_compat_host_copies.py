"""mindspeed_ms.compat._host_copies (optional C) through host_arithmetic.masked_fill: the one-pass masked copy gives
the bits NumPy's two passes give (NaN payloads, signed zeros, infinities, subnormals), for masks that repeat along
the leading dimensions; everything else (a mask that does not repeat end to end, strided or other-dtype arrays,
overlapping buffers, empty arrays) goes to NumPy's passes. tests/test_compat_fast_masked_fill.py compares the whole
path with real PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

from mindspeed_ms.compat import host_arithmetic


def test_the_copies_are_built_by_the_install() -> None:
    assert host_arithmetic.COPIES_ACCELERATED, \
        "mindspeed_ms.compat._host_copies is missing: pip install -e . needs a C compiler"


def _values(shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    values = rng.standard_normal(shape).astype(np.float32)
    flat = values.reshape(-1)
    flat[:6] = [np.nan, -0.0, np.inf, -np.inf, 1e-45, -1e-40]
    flat.view(np.uint32)[6] = 0x7FC00123  # a NaN with a payload
    return values


def _numpy(values: np.ndarray, mask: np.ndarray, value: np.float32) -> np.ndarray:
    out = np.full(values.shape, 7.0, np.float32)
    host_arithmetic.numpy_masked_fill(values, mask, value, out)
    return out


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


_CAUSAL = np.triu(np.ones((128, 128), bool), 1)
_MASKS = {"causal [1, 1, s, s]": _CAUSAL[None, None], "causal [s, s]": _CAUSAL,
          "full": np.random.default_rng(1).random((4, 8, 128, 128)) < 0.3,
          "per batch [b, 1, s, s]": np.random.default_rng(2).random((4, 1, 128, 128)) < 0.5,
          "column [s, 1]": (np.arange(128) % 3 == 0)[:, None], "scalar": np.array(True)}


def test_numpys_passes_fill_what_the_mask_says() -> None:
    values = _values((4, 8, 128, 128))
    out = _numpy(values, _CAUSAL, np.float32(-10000.0))
    expected = np.where(np.broadcast_to(_CAUSAL, values.shape), np.float32(-10000.0), values)
    assert _same_bits(out, expected)


@pytest.mark.parametrize("name", sorted(_MASKS))
@pytest.mark.parametrize("value", [-10000.0, 0.0, -np.inf, np.nan])
def test_the_masked_copy_has_numpys_bits(name: str, value: float) -> None:
    values, mask, fill = _values((4, 8, 128, 128)), _MASKS[name], np.float32(value)
    out = np.full(values.shape, 7.0, np.float32)
    host_arithmetic.masked_fill(values, mask, fill, out)
    assert _same_bits(out, _numpy(values, mask, fill))


def test_what_the_c_copy_does_not_take_gets_numpys_passes() -> None:
    values, mask = _values((4, 128, 128)), _CAUSAL
    cases = {"float64 values": (values.astype(np.float64), mask),
             "strided values": (values.transpose(0, 2, 1), mask), "strided mask": (values, mask.T),
             "odd mask": (values, mask[:, :1]), "empty": (values[:0], mask)}
    for name, (source, which) in cases.items():
        out = np.full(source.shape, 7.0, np.float32)
        host_arithmetic.masked_fill(source, which, np.float32(-1.0), out)
        assert _same_bits(out, _numpy(source, which, np.float32(-1.0))), name
    strided = np.full((4, 128, 256), 7.0, np.float32)[:, :, ::2]  # a strided output
    host_arithmetic.masked_fill(values, mask, np.float32(-1.0), strided)
    assert _same_bits(np.ascontiguousarray(strided), _numpy(values, mask, np.float32(-1.0)))
    same = values.copy()  # values and output one buffer
    host_arithmetic.masked_fill(same, mask, np.float32(-1.0), same)
    assert _same_bits(same, _numpy(values, mask, np.float32(-1.0)))


@pytest.mark.parametrize("rows", [1, 7, 50257, 2**31])
def test_narrowed_indices_are_the_int64_values_and_refused_outside_the_rows(rows: int) -> None:
    rng = np.random.default_rng(rows)
    source = rng.integers(0, rows, size=(4, 32), dtype=np.int64)
    source[0, :2] = (0, rows - 1)  # both ends inside
    for narrow in (host_arithmetic.narrow_indices, host_arithmetic.numpy_narrow_indices):
        out = np.full(source.shape, -7, np.int32)
        assert narrow(source, out, rows) is True
        np.testing.assert_array_equal(out.astype(np.int64), source)
    for outside in (-1, rows, 2**40, -(2**40)):  # wrap-arounds of int32 must not pass
        bad = source.copy()
        bad[3, 31] = outside
        for narrow in (host_arithmetic.narrow_indices, host_arithmetic.numpy_narrow_indices):
            assert narrow(bad, np.empty(bad.shape, np.int32), rows) is False, (narrow, outside)


def test_what_the_c_narrowing_does_not_take_gets_numpy() -> None:
    source = np.arange(24, dtype=np.int64).reshape(4, 6)
    cases = {"int64 out": (source, np.empty((4, 6), np.int64), 24), "int32 source": (source.astype(np.int32),
             np.empty((4, 6), np.int32), 24), "strided source": (source.T, np.empty((6, 4), np.int32), 24),
             "rows beyond int32": (source, np.empty((4, 6), np.int32), 2**31 + 1)}
    for name, (given, out, rows) in cases.items():
        assert host_arithmetic.narrow_indices(given, out, rows) is True, name
        np.testing.assert_array_equal(out, given, err_msg=name)
    assert host_arithmetic.narrow_indices(source.T, np.empty((6, 4), np.int32), 23) is False  # 23 is outside
