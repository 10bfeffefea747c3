"""mindspeed_ms.compat.alpha_ops: alpha= of add/sub/subtract as PyTorch applies it. The wrappers over MSAdapter's own
ops run in a child interpreter (importing MSAdapter patches importlib.metadata process-wide: the doctor's tests in
this process would see its fake torch distribution); PyTorch's values are compared by
tests/conformance/cases/fix_alpha.py."""

from __future__ import annotations

import sys
import textwrap
from typing import Any

import mindspore
import numpy as np
import pytest
from _helpers import ROOT, run_python, subprocess_env

from mindspeed_ms.compat import alpha_ops
from mindspeed_ms.compat.errors import TorchRefusalError

_OVER_MSADAPTER = '''
import mindspore
import numpy as np
from msadapter.ops import pointwise

from mindspeed_ms.compat import alpha_ops

a = mindspore.Tensor(np.array([1.0, 2.0, -3.5], np.float32))
b = mindspore.Tensor(np.array([0.5, 0.25, 4.0], np.float32))
# the defect: MSAdapter's CPU sub drops alpha
assert np.array_equal(pointwise.sub(a, b, alpha=2).asnumpy(), (a - b).asnumpy())
sub = alpha_ops.sub_alpha_wrapper(pointwise.sub)
assert np.array_equal(sub(a, b, alpha=2).asnumpy(), np.array([0.0, 1.5, -11.5], np.float32))
assert np.array_equal(sub(a, 3, alpha=-1.5).asnumpy(), np.array([5.5, 6.5, 1.0], np.float32))
out = mindspore.Tensor(np.zeros(3, np.float32))
result = sub(a, b, alpha=3, out=out)
assert np.array_equal(out.asnumpy(), np.array([-0.5, 1.25, -15.5], np.float32)), out
assert np.array_equal(result.asnumpy(), out.asnumpy())
# bool add with alpha: input or (alpha and other)
add = alpha_ops.add_alpha_wrapper(pointwise.add)
t = mindspore.Tensor(np.array([True, False, False]))
u = mindspore.Tensor(np.array([True, True, False]))
assert add(t, u, alpha=2).asnumpy().tolist() == [True, True, False]
assert add(t, u, alpha=0).asnumpy().tolist() == [True, False, False]
# subtract calls torch.sub as it is in force: with the adaptor, the alpha-applying wrap
pointwise.sub = sub
subtract = alpha_ops.subtract_wrapper(pointwise.subtract)
assert np.array_equal(subtract(a, b).asnumpy(), (a - b).asnumpy())
out = mindspore.Tensor(np.zeros(3, np.float32))
subtract(a, b, alpha=2, out=out)
assert np.array_equal(out.asnumpy(), np.array([0.0, 1.5, -11.5], np.float32)), out
print("checked")
'''


def test_the_wrappers_over_msadapters_ops() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    assert "checked" in run_python(sys.executable, "-c", textwrap.dedent(_OVER_MSADAPTER), env=env)


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


def test_the_refusal_changes_nothing_and_the_op_never_runs() -> None:
    ran: list[str] = []

    def op(input: Any, other: Any, **kwargs: Any) -> None:
        ran.append("op")

    with pytest.raises(TorchRefusalError):
        alpha_ops.add_alpha_wrapper(op)(mindspore.Tensor(np.array([1])), 2, alpha=0.5)
    assert ran == []
