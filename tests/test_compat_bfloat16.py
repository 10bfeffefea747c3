"""mindspeed_ms.compat.bfloat16's grad_in_float32_wrapper on real MindSpore tensors (values and gradients against
real PyTorch: tests/conformance/cases/fix_bfloat16_grad.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

mindspore = pytest.importorskip("mindspore")

from mindspore import ops  # noqa: E402

from mindspeed_ms.compat import bfloat16  # noqa: E402


def _bf16(values: list[float], requires_grad: bool = False) -> Any:
    out = ops.cast(mindspore.tensor(np.array(values, np.float32)), mindspore.bfloat16)
    out.requires_grad = requires_grad
    return out


def test_the_raw_backward_kernel_still_lacks_bfloat16() -> None:
    """Fails (and the wrap can go) once MindSpore's CPU backend gets a bfloat16 StridedSliceGrad kernel."""
    def first_two(x: Any) -> Any:
        return ops.cast(x[:2], mindspore.float32).sum()

    with pytest.raises(TypeError, match="StridedSliceGrad"):
        mindspore.grad(first_two)(_bf16([1.0, 2.0, 3.0]))


def test_a_bfloat16_tensor_requiring_grad_is_selected_in_float32_and_cast_back() -> None:
    seen: list[Any] = []

    def split(x: Any, size: int) -> tuple[Any, ...]:
        seen.append(x.dtype)
        return tuple(ops.split(x, size))

    wrapped = bfloat16.grad_in_float32_wrapper(split)
    pieces = wrapped(_bf16([1.0, 2.5, -3.0], requires_grad=True), 2)
    assert seen == [mindspore.float32]
    assert [piece.dtype for piece in pieces] == [mindspore.bfloat16, mindspore.bfloat16]
    assert [ops.cast(piece, mindspore.float32).asnumpy().tolist() for piece in pieces] == [[1.0, 2.5], [-3.0]]


def test_the_gradient_flows_back_to_the_bfloat16_input() -> None:
    getitem = bfloat16.grad_in_float32_wrapper(mindspore.Tensor.__getitem__)

    def loss(x: Any) -> Any:
        return ops.cast(getitem(x, slice(1, 3)), mindspore.float32).sum() * 2

    x = _bf16([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    grad = mindspore.grad(loss)(x)
    assert grad.dtype == mindspore.bfloat16
    assert ops.cast(grad, mindspore.float32).asnumpy().tolist() == [0.0, 2.0, 2.0, 0.0]


def test_other_tensors_go_to_the_op_untouched() -> None:
    seen: list[Any] = []

    def op(x: Any, *args: Any) -> Any:
        seen.append(x)
        return x

    wrapped = bfloat16.grad_in_float32_wrapper(op)
    frozen = _bf16([1.0])  # a bfloat16 buffer that needs no gradient keeps sharing its memory
    f32 = mindspore.tensor(np.array([1.0], np.float32))
    f32.requires_grad = True
    assert wrapped(frozen, 0) is frozen
    assert wrapped(f32, 0) is f32
    assert seen == [frozen, f32]


def test_any_bfloat16_operand_is_widened_and_the_result_cast_back() -> None:
    where = bfloat16.any_via_float32_wrapper(ops.where)
    condition = mindspore.tensor(np.array([True, False, True]))
    out = where(condition, _bf16([1.5, 2.0, 3.0]), _bf16([-1.0, -2.0, -3.0]))
    assert out.dtype == mindspore.bfloat16
    assert ops.cast(out, mindspore.float32).asnumpy().tolist() == [1.5, -2.0, 3.0]
    stack = bfloat16.any_via_float32_wrapper(ops.stack)
    stacked = stack([_bf16([1.0]), _bf16([2.0])])
    assert stacked.dtype == mindspore.bfloat16
    assert ops.cast(stacked, mindspore.float32).asnumpy().tolist() == [[1.0], [2.0]]


def test_a_float32_operand_keeps_the_promoted_result_and_no_bfloat16_goes_untouched() -> None:
    seen: list[Any] = []

    def op(*args: Any) -> Any:
        seen.append(tuple(arg.dtype for arg in args))
        return args[-1]

    wrapped = bfloat16.any_via_float32_wrapper(op)
    f32 = mindspore.tensor(np.array([1.0], np.float32))
    assert wrapped(_bf16([2.0]), f32).dtype == mindspore.float32  # PyTorch's promotion: float32
    assert wrapped(f32, f32) is f32
    assert seen == [(mindspore.float32, mindspore.float32), (mindspore.float32, mindspore.float32)]
