"""mindspeed_ms.compat.ieee_special: nan and signed zeros through maximum/minimum, clamp, relu, softplus, expm1 and
log1p as PyTorch computes them. Expected values are C's and NumPy's (IEEE); the conformance cases
(tests/conformance/cases/ops_special_values.py) compare the patched ops with PyTorch itself."""

from __future__ import annotations

import math
from typing import Any

import mindspore
import numpy as np
import pytest
from mindspore import ops

from mindspeed_ms.compat import ieee_special as special
from mindspeed_ms.compat.errors import OperandTypeError

NAN, INF = float("nan"), float("inf")


def _t(values: list[float], dtype: Any = mindspore.float32) -> mindspore.Tensor:
    return mindspore.Tensor(np.float32(values)).astype(dtype)


def _same_bits(ours: Any, expected: list[float]) -> None:
    ours = ours.astype(mindspore.float32).asnumpy()
    expected_array = np.float32(expected)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(expected_array))
    keep = ~np.isnan(expected_array)
    np.testing.assert_array_equal(ours[keep], expected_array[keep])
    np.testing.assert_array_equal(np.signbit(ours[keep]), np.signbit(expected_array[keep]))


def test_extremum_propagates_nan_and_refuses_numbers() -> None:
    maximum = special.extremum_wrapper("maximum")(ops.maximum)
    _same_bits(maximum(_t([NAN, 1.0, 2.0]), _t([0.0, NAN, 1.0])), [NAN, NAN, 2.0])
    minimum = special.extremum_wrapper("minimum")(ops.minimum)
    _same_bits(minimum(_t([NAN, 1.0, 2.0]), _t([0.0, NAN, 1.0])), [NAN, NAN, 1.0])
    with pytest.raises(OperandTypeError, match="must be Tensor, not float"):
        maximum(_t([1.0]), 0.0)
    assert isinstance(OperandTypeError("x", "y"), TypeError)


def test_clamp_keeps_nan_and_zeros_equal_to_a_bound() -> None:
    clamp = special.clamp_wrapper(ops.clamp)
    x = _t([NAN, -0.0, 0.0, -3.0, 3.0, INF])
    _same_bits(clamp(x, -2.0, 2.0), [NAN, -0.0, 0.0, -2.0, 2.0, 2.0])
    _same_bits(clamp(x, min=0.0), [NAN, -0.0, 0.0, 0.0, 3.0, INF])
    _same_bits(clamp(x, max=-0.0), [NAN, -0.0, 0.0, -3.0, -0.0, -0.0])
    _same_bits(clamp(x, min=NAN), [NAN] * 6)


def test_relu_softplus_keep_nan_and_negative_zero() -> None:
    relu = special.relu_wrapper(ops.relu)
    _same_bits(relu(_t([NAN, -0.0, 0.0, -1.0, 2.0])), [NAN, -0.0, 0.0, 0.0, 2.0])
    softplus = special.nan_keeping_wrapper(ops.softplus)
    _same_bits(softplus(_t([NAN, 0.0])), [NAN, math.log(2.0)])
    _same_bits(softplus(_t([NAN, 0.0], mindspore.float16)), [NAN, float(np.float16(math.log(2.0)))])


@pytest.mark.parametrize("name", ["expm1", "log1p"])
def test_expm1_log1p_keep_the_sign_of_zero(name: str) -> None:
    op = special.signed_zero_wrapper(getattr(ops, name))
    _same_bits(op(_t([-0.0, 0.0])), [-0.0, 0.0])
    result = op(_t([-0.0, 1.0]))
    np.testing.assert_allclose(result.asnumpy()[1], getattr(np, name)(np.float32(1.0)), rtol=1e-6)


def test_unchanged_without_special_values_is_the_kernels_result() -> None:
    x = _t([-1.0, 0.5, 2.0])
    clamp = special.clamp_wrapper(lambda *args, **kwargs: ops.clamp(*args, **kwargs))
    assert np.array_equal(clamp(x, -0.75, 1.0).asnumpy(), ops.clamp(x, -0.75, 1.0).asnumpy())
    seen: list[Any] = []

    def kernel(a: Any, b: Any) -> Any:
        seen.append(ops.maximum(a, b))
        return seen[-1]

    assert special.extremum_wrapper("maximum")(kernel)(x, _t([0.0, 0.0, 0.0])) is seen[0]
