"""mindspeed_ms.compat.ieee_division: division by a zero as IEEE 754 (and PyTorch) computes it, on MindSpore's CPU
kernels; integer division by zero refused. The expected values are NumPy's IEEE float32 division (PyTorch's are
compared by tests/conformance/cases/ops_special_values.py)."""

from __future__ import annotations

from typing import Any

import mindspore
import numpy as np
import pytest
from mindspore import ops

from mindspeed_ms.compat import ieee_division as ieee
from mindspeed_ms.compat.errors import TorchRefusalError

#: no quotient of two of these is subnormal (MindSpore's CPU kernels flush subnormal results to zero from a size on)
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1.0, 2.5], dtype=np.float32)


def _ieee(a: Any, b: Any) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.asarray(np.float32(a) / np.float32(b) if np.isscalar(a) and np.isscalar(b) else
                          np.asarray(a, np.float32) / np.asarray(b, np.float32), dtype=np.float32)


def _same_bits(ours: np.ndarray, expected: np.ndarray) -> None:
    ours, expected = np.asarray(ours, np.float32), np.asarray(expected, np.float32)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(expected))
    keep = ~np.isnan(expected)
    np.testing.assert_array_equal(ours[keep], expected[keep])
    np.testing.assert_array_equal(np.signbit(ours[keep]), np.signbit(expected[keep]))


def test_mindspores_kernel_gets_the_sign_of_a_zero_divisor_wrong() -> None:
    """The bug the module works around: if MindSpore fixes it, this fails and the wrapper can go."""
    quotient = ops.div(mindspore.Tensor(np.float32([1.0, np.nan])), mindspore.Tensor(np.float32([-0.0, 0.0])))
    assert quotient.asnumpy().tolist() == [np.inf, -np.inf]


def test_tensor_divisor_every_pair_of_specials() -> None:
    a, b = np.repeat(SPECIALS, SPECIALS.size), np.tile(SPECIALS, SPECIALS.size)
    dividend, divisor = mindspore.Tensor(a), mindspore.Tensor(b)
    fixed = ieee.zero_divisors(dividend, divisor, ops.div(dividend, divisor))
    _same_bits(fixed.asnumpy(), _ieee(a, b))


@pytest.mark.parametrize("zero", [0.0, -0.0, 0])
def test_python_number_zero_divisor(zero: float) -> None:
    dividend = mindspore.Tensor(SPECIALS)
    fixed = ieee.zero_divisors(dividend, zero, ops.div(dividend, zero))
    _same_bits(fixed.asnumpy(), _ieee(SPECIALS, np.float32(zero)))


def test_python_number_dividend_over_zero_tensor() -> None:
    divisor = mindspore.Tensor(np.float32([0.0, -0.0, 2.0]))
    fixed = ieee.zero_divisors(-3.0, divisor, ops.div(-3.0, divisor))
    _same_bits(fixed.asnumpy(), _ieee(np.float32([-3.0] * 3), np.float32([0.0, -0.0, 2.0])))


def test_broadcast_zero_divisor_takes_the_quotients_shape() -> None:
    dividend, divisor = mindspore.Tensor(np.float32([1.0, -2.0, np.nan])), mindspore.Tensor(np.float32([[-0.0]]))
    fixed = ieee.zero_divisors(dividend, divisor, ops.div(dividend, divisor))
    assert fixed.shape == (1, 3)
    _same_bits(fixed.asnumpy(), _ieee(np.float32([[1.0, -2.0, np.nan]]), np.float32([[-0.0]])))


def test_float16_and_bfloat16_quotients_keep_their_dtype() -> None:
    for dtype in (mindspore.float16, mindspore.bfloat16):
        dividend = mindspore.Tensor(np.float32([1.0, np.nan, 0.0])).astype(dtype)
        divisor = mindspore.Tensor(np.float32([-0.0, 0.0, -0.0])).astype(dtype)
        quotient = ops.div(dividend.astype(mindspore.float32), divisor.astype(mindspore.float32)).astype(dtype)
        fixed = ieee.zero_divisors(dividend, divisor, quotient)
        assert fixed.dtype == dtype
        _same_bits(fixed.astype(mindspore.float32).asnumpy(), np.float32([-np.inf, np.nan, np.nan]))


def test_no_zero_divisor_returns_the_quotient_itself() -> None:
    dividend, divisor = mindspore.Tensor(SPECIALS), mindspore.Tensor(np.float32([3.0] * SPECIALS.size))
    quotient = ops.div(dividend, divisor)
    assert ieee.zero_divisors(dividend, divisor, quotient) is quotient
    assert ieee.zero_divisors(dividend, 2.0, quotient) is quotient


def test_integral_quotient_is_left_alone() -> None:
    quotient = mindspore.Tensor(np.int64([1, 2]))
    assert ieee.zero_divisors(mindspore.Tensor(np.int64([1, 2])), 0, quotient) is quotient


def test_integer_division_by_zero_is_refused_as_pytorch_refuses_it() -> None:
    with pytest.raises(RuntimeError, match="ZeroDivisionError") as caught:
        ieee.refuse_integer_zero("__floordiv__", mindspore.Tensor(np.int64([5, -5])),
                                 mindspore.Tensor(np.int64([1, 0])))
    assert isinstance(caught.value, TorchRefusalError)
    assert caught.value.op == "__floordiv__"
    with pytest.raises(TorchRefusalError):
        ieee.refuse_integer_zero("__mod__", mindspore.Tensor(np.int32([5])), 0)
    ieee.refuse_integer_zero("__mod__", mindspore.Tensor(np.float32([5])), 0)  # a float division: no refusal
    ieee.refuse_integer_zero("__mod__", mindspore.Tensor(np.int64([5])), mindspore.Tensor(np.int64([2])))


def test_division_wrapper_repairs_every_form() -> None:
    divide = ieee.division_wrapper("div")(ops.div)
    dividend = mindspore.Tensor(np.float32([1.0, np.nan]))
    _same_bits(divide(dividend, -0.0).asnumpy(), np.float32([-np.inf, np.nan]))
    out = mindspore.Tensor(np.zeros(2, np.float32))

    def div_with_out(a: Any, b: Any, *, rounding_mode: Any = None, out: Any = None) -> Any:
        result = ops.div(a, b, rounding_mode=rounding_mode)
        if out is not None:  # as MSAdapter's call_ms_func: the wrong quotient copied into out
            out.copy_(result)
            return out
        return result

    assert ieee.division_wrapper("div")(div_with_out)(dividend, -0.0, out=out) is out
    _same_bits(out.asnumpy(), np.float32([-np.inf, np.nan]))
    reflected = ieee.division_wrapper("__rtruediv__", reflected=True)(lambda self, other: ops.div(other, self))
    _same_bits(reflected(mindspore.Tensor(np.float32([-0.0, 4.0])), 2.0).asnumpy(), np.float32([-np.inf, 0.5]))
    with pytest.raises(TorchRefusalError, match="ZeroDivisionError"):
        divide(mindspore.Tensor(np.int64([3])), mindspore.Tensor(np.int64([0])), rounding_mode="floor")


def test_floor_wrapper_refuses_integers_and_computes_pytorchs_floats() -> None:
    floor = ieee.floor_wrapper("__floordiv__")(ops.floor_divide)
    with pytest.raises(TorchRefusalError):
        floor(mindspore.Tensor(np.int64([3])), 0)
    _same_bits(floor(mindspore.Tensor(np.float32([2.0, -2.0])), -0.0).asnumpy(), np.float32([-np.inf, np.inf]))
    # Python's float floor division is PyTorch's: inf // 3 is nan, -1 // inf is -1.0, 1 // -inf is -1.0
    dividend = np.float32([np.inf, -1.0, 1.0, 7.0, -0.0])
    divisor = np.float32([3.0, np.inf, -np.inf, -2.0, 5.0])
    expected = np.float32([float(x) // float(y) for x, y in zip(dividend, divisor)])
    _same_bits(floor(mindspore.Tensor(dividend), mindspore.Tensor(divisor)).asnumpy(), expected)
    rfloor = ieee.floor_wrapper("__rfloordiv__", reflected=True)(lambda self, other: other // self)
    with pytest.raises(TorchRefusalError):
        rfloor(mindspore.Tensor(np.int64([0])), 7)


def test_floor_wrapper_remainder_is_pytorchs() -> None:
    mod = ieee.floor_wrapper("__mod__", remainder=True)(lambda a, b: a % b)
    dividend = np.float32([1.0, -1.0, -0.0, 0.0, -1.0, 5.5, -5.5, 3.0])
    divisor = np.float32([np.inf, np.inf, 1.0, -1.0, 1.0, 2.0, 2.0, -2.0])
    with np.errstate(invalid="ignore"):  # PyTorch's definition over C's fmod (Python's % differs at zeros' signs)
        fmod = np.fmod(dividend, divisor)
        expected = np.where((fmod != 0) & ((divisor < 0) != (fmod < 0)), fmod + divisor, fmod)
    _same_bits(mod(mindspore.Tensor(dividend), mindspore.Tensor(divisor)).asnumpy(), expected)
    with pytest.raises(TorchRefusalError, match="ZeroDivisionError"):
        mod(mindspore.Tensor(np.int64([3])), mindspore.Tensor(np.int64([0])))


def test_rounding_modes_of_floats() -> None:
    divide = ieee.division_wrapper("div")(ops.div)
    dividend = mindspore.Tensor(np.float32([np.inf, -7.0, 1.0]))
    divisor = mindspore.Tensor(np.float32([3.0, 2.0, -0.0]))
    _same_bits(divide(dividend, divisor, rounding_mode="floor").asnumpy(), np.float32([np.nan, -4.0, -np.inf]))
    _same_bits(divide(dividend, divisor, rounding_mode="trunc").asnumpy(), np.float32([np.inf, -3.0, -np.inf]))
    half = divide(dividend.astype(mindspore.float16), divisor.astype(mindspore.float16), rounding_mode="trunc")
    assert half.dtype == mindspore.float16  # MindSpore's Trunc has no float16 kernel: truncated in float32
    _same_bits(half.astype(mindspore.float32).asnumpy(), np.float32([np.inf, -3.0, -np.inf]))


def test_int64_floor_division_beyond_2_to_53_is_exact() -> None:
    dividend = np.int64([-2 ** 63, 2 ** 63 - 1, 7, -7])
    divisor = np.int64([3, -2, 2, 2])
    floor = ieee.floor_wrapper("__floordiv__")(ops.floor_divide)
    expected = [int(x) // int(y) for x, y in zip(dividend, divisor)]
    assert floor(mindspore.Tensor(dividend), mindspore.Tensor(divisor)).asnumpy().tolist() == expected
    mod = ieee.floor_wrapper("__mod__", remainder=True)(lambda a, b: a % b)
    assert mod(mindspore.Tensor(dividend), 3).asnumpy().tolist() == [int(x) % 3 for x in dividend]
    small = mindspore.Tensor(np.int64([7, -7]))
    kernel = ops.floor_divide(small, 2)
    assert ieee.exact_integer(small, 2, kernel) is kernel  # within 2**53: MindSpore's result as it is
