"""mindspeed_ms.compat.alpha_ops: alpha= of add/sub/subtract as PyTorch applies it, over MSAdapter's own ops (real
MindSpore; PyTorch's values are compared by tests/conformance/cases/fix_alpha.py)."""

from __future__ import annotations

from typing import Any

import mindspore
import numpy as np
import pytest
from msadapter.ops import pointwise

from mindspeed_ms.compat import alpha_ops
from mindspeed_ms.compat.errors import TorchRefusalError


def _floats() -> tuple[Any, Any]:
    return (mindspore.Tensor(np.array([1.0, 2.0, -3.5], np.float32)),
            mindspore.Tensor(np.array([0.5, 0.25, 4.0], np.float32)))


def test_msadapters_sub_drops_alpha_and_the_wrapper_applies_it() -> None:
    a, b = _floats()
    assert np.array_equal(pointwise.sub(a, b, alpha=2).asnumpy(), (a - b).asnumpy())  # the defect: alpha ignored
    sub = alpha_ops.sub_alpha_wrapper(pointwise.sub)
    expected = np.array([1.0, 2.0, -3.5], np.float32) - 2 * np.array([0.5, 0.25, 4.0], np.float32)
    assert np.array_equal(sub(a, b, alpha=2).asnumpy(), expected)
    assert np.array_equal(sub(a, 3, alpha=-1.5).asnumpy(), np.array([5.5, 6.5, 1.0], np.float32))


def test_sub_with_out_writes_the_alpha_result() -> None:
    a, b = _floats()
    out = mindspore.Tensor(np.zeros(3, np.float32))
    result = alpha_ops.sub_alpha_wrapper(pointwise.sub)(a, b, alpha=3, out=out)
    assert np.array_equal(result.asnumpy(), out.asnumpy())
    assert np.array_equal(out.asnumpy(), np.array([-0.5, 1.25, -15.5], np.float32))


def test_without_alpha_the_op_is_called_as_it_was() -> None:
    calls: list[tuple[Any, ...]] = []

    def op(input: Any, other: Any, *args: Any, **kwargs: Any) -> str:
        calls.append((input, other, args, kwargs))
        return "op's"

    for wrapper in (alpha_ops.sub_alpha_wrapper, alpha_ops.add_alpha_wrapper):
        assert wrapper(op)("a", "b") == "op's"
        assert wrapper(op)("a", "b", alpha=1) == "op's"
    assert calls == [("a", "b", (), {}), ("a", "b", (), {"alpha": 1})] * 2


@pytest.mark.parametrize(("input", "other", "alpha"), [
    (np.array([1, 2]), np.array([1, 1]), 0.5),    # integer tensors, float alpha
    (np.array([1, 2]), 3, 1.0),                    # a float 1 is still a float alpha
    (np.array([True]), np.array([False]), 0.5),    # bool result, float alpha
    (np.array([1.0], np.float32), 2.0, True),      # bool alpha, float result
])
def test_pytorchs_alpha_checks_refuse_before_computing(input: Any, other: Any, alpha: Any) -> None:
    other = mindspore.Tensor(other) if isinstance(other, np.ndarray) else other
    with pytest.raises(TorchRefusalError) as error:
        alpha_ops.check_alpha("torch.add", mindspore.Tensor(input), other, alpha)
    assert isinstance(error.value, RuntimeError)
    assert "alpha" in str(error.value)


def test_an_integer_tensor_with_a_float_other_takes_a_float_alpha() -> None:
    alpha_ops.check_alpha("torch.sub", mindspore.Tensor(np.array([1, 2])), 0.5, 0.5)
    alpha_ops.check_alpha("torch.sub", mindspore.Tensor(np.array([1, 2])),
                          mindspore.Tensor(np.array(0.5, np.float32)), 0.5)


def test_bool_add_with_alpha_is_or() -> None:
    a = mindspore.Tensor(np.array([True, False, False]))
    b = mindspore.Tensor(np.array([True, True, False]))
    add = alpha_ops.add_alpha_wrapper(pointwise.add)
    assert add(a, b, alpha=2).asnumpy().tolist() == [True, True, False]
    assert add(a, b, alpha=0).asnumpy().tolist() == [True, False, False]


def test_subtract_takes_alpha_and_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # subtract calls torch.sub as it is in force: with the adaptor, the alpha-applying wrap
    monkeypatch.setattr(pointwise, "sub", alpha_ops.sub_alpha_wrapper(pointwise.sub))
    a, b = _floats()
    subtract = alpha_ops.subtract_wrapper(pointwise.subtract)
    assert np.array_equal(subtract(a, b).asnumpy(), (a - b).asnumpy())
    out = mindspore.Tensor(np.zeros(3, np.float32))
    subtract(a, b, alpha=2, out=out)
    assert np.array_equal(out.asnumpy(), np.array([0.0, 1.5, -11.5], np.float32))
