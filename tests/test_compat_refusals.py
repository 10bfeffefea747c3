"""mindspeed_ms.compat.refusals: refusals re-raised under PyTorch's builtin class, MindSpore's kept (each op's
real refusal is compared with PyTorch's in tests/conformance/cases/ops_errors.py)."""

from __future__ import annotations

import pytest

from mindspeed_ms.compat import refusals
from mindspeed_ms.compat.errors import (
    InPlaceWriteError,
    OpIndexRefusedError,
    OpLookupRefusedError,
    OpShapeRefusedError,
    OpTypeRefusedError,
    OpValueRefusedError,
)


def _raising(error: Exception):  # noqa: ANN202 - stands in for an op
    def op(*args: object, **kwargs: object) -> None:
        raise error

    return op


@pytest.mark.parametrize(("op", "error", "expected", "also"), [
    ("Tensor.view", ValueError("proposed_shape is invalid"), OpShapeRefusedError, RuntimeError),
    ("torch.neg", TypeError("Select CPU operator[Neg] fail! Unsupported data type!"), OpTypeRefusedError, RuntimeError),
    ("Tensor.to", KeyError("not-a-device"), OpLookupRefusedError, RuntimeError),
    ("Tensor.select", ValueError("start exceed range"), OpIndexRefusedError, IndexError),
    ("Tensor.sum", ValueError("the axis value must be in [-2,2), but got 3"), OpIndexRefusedError, IndexError),
    ("Tensor.__getitem__", RuntimeError("the 'input_indices' should be in the range [0, 2)"), OpIndexRefusedError,
     IndexError),
    ("torch.tensor", TypeError("the input_data contains unsupported element"), OpValueRefusedError, ValueError),
    ("Tensor.__getitem__", ValueError("For 'tensor getitem', x.shape and y.shape need to broadcast. The value of "
                                      "x.shape[0] or y.shape[0] must be 1"), OpIndexRefusedError, IndexError),
])
def test_refusal_is_raised_as_pytorchs_class_and_keeps_mindspores(op: str, error: Exception, expected: type,
                                                                   also: type) -> None:
    wrapped = refusals.refusal_class_wrapper(op)(_raising(error))
    with pytest.raises(expected) as raised:
        wrapped(1, key=2)
    assert isinstance(raised.value, also)
    assert isinstance(raised.value, type(error))
    assert raised.value.__cause__ is error
    assert raised.value.op == op
    assert str(raised.value).startswith(f"{op}: ")


def test_dim_ops_keep_runtime_error_for_other_refusals_and_same_class_passes_through() -> None:
    error = TypeError("Kernel select failed")
    assert isinstance(refusals.translate("Tensor.index_select", error), OpTypeRefusedError)
    same = RuntimeError("mat1 and mat2 shapes cannot be multiplied")
    assert refusals.translate("torch.nn.functional.linear", same) is same
    index = IndexError("out of range")
    assert refusals.translate("Tensor.select", index) is index


def test_our_typed_errors_and_results_pass_through_untouched() -> None:
    ours = InPlaceWriteError("view", "argument", "already PyTorch's")
    with pytest.raises(InPlaceWriteError) as raised:
        refusals.refusal_class_wrapper("Tensor.view")(_raising(ours))()
    assert raised.value is ours
    assert refusals.refusal_class_wrapper("Tensor.view")(lambda x, y=1: x + y)(2, y=3) == 5


def test_message_drops_mindspores_cpp_trace() -> None:
    error = ValueError("only one dimension can be inferred\n\n----------------\n- C++ Call Stack: (For framework "
                       "developers)")
    assert str(refusals.translate("Tensor.view", error)) == "Tensor.view: only one dimension can be inferred"


def test_a_refusal_switches_mindspores_grad_flag_back_on_at_once() -> None:
    from mindspore.common.api import _pynative_executor

    before = _pynative_executor.grad_flag()
    try:
        _pynative_executor.set_grad_flag(False)  # what MindSpore's executor does when an argument fails to convert
        with pytest.raises(OpTypeRefusedError):
            refusals.refusal_class_wrapper("Tensor.reshape")(_raising(TypeError("Failed calling Reshape")))()
        assert _pynative_executor.grad_flag()
    finally:
        _pynative_executor.set_grad_flag(before)
