"""npu_matmul_add_fp32: in-place float32 accumulation for 2-D and 3-D inputs."""

from __future__ import annotations

import mindspore
import numpy as np
import pytest
from mindspore import Parameter, Tensor

from mindspeed_ms.ops import npu_matmul_add_fp32


@pytest.mark.parametrize("lead", [(6,), (3, 2)])
def test_matmul_add_accumulates_in_place_for_2d_and_3d_inputs(lead: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((*lead, 5)).astype(np.float32)
    dy = rng.standard_normal((*lead, 4)).astype(np.float32)
    g0 = rng.standard_normal((4, 5)).astype(np.float32)
    grad = Tensor(g0.copy())
    returned = npu_matmul_add_fp32(Tensor(x), Tensor(dy), grad)
    ref = g0 + dy.reshape(-1, 4).T.astype(np.float64) @ x.reshape(-1, 5)
    assert returned is grad
    np.testing.assert_allclose(grad.asnumpy(), ref, rtol=1e-5, atol=1e-5)


def test_matmul_add_updates_a_parameter_buffer_twice() -> None:
    rng = np.random.default_rng(1)
    x, dy = rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
    grad = Parameter(Tensor(np.zeros((2, 3), np.float32)), name="main_grad", requires_grad=False)
    npu_matmul_add_fp32(Tensor(x), Tensor(dy), grad)
    npu_matmul_add_fp32(Tensor(x), Tensor(dy), grad)
    np.testing.assert_allclose(grad.asnumpy(), 2 * dy.T @ x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [mindspore.float16, mindspore.bfloat16])
def test_matmul_add_accumulates_half_inputs_in_float32(dtype: mindspore.dtype) -> None:
    rng = np.random.default_rng(2)
    x = Tensor(rng.standard_normal((8, 4)).astype(np.float32)).astype(dtype)
    dy = Tensor(rng.standard_normal((8, 3)).astype(np.float32)).astype(dtype)
    grad = Tensor(np.ones((3, 4), np.float32))
    npu_matmul_add_fp32(x, dy, grad)
    f = lambda t: t.astype(mindspore.float32).asnumpy().astype(np.float64)  # noqa: E731
    # The products of rounded inputs are exact in float32 here; only the float32 sum rounds.
    np.testing.assert_allclose(grad.asnumpy(), 1 + f(dy).T @ f(x), rtol=1e-5, atol=1e-5)


def test_matmul_add_with_zero_sized_inputs_leaves_grad_unchanged() -> None:
    grad = Tensor(np.full((3, 4), 2.0, np.float32))
    npu_matmul_add_fp32(Tensor(np.zeros((0, 4), np.float32)), Tensor(np.zeros((0, 3), np.float32)), grad)
    np.testing.assert_array_equal(grad.asnumpy(), np.full((3, 4), 2.0, np.float32))


def test_matmul_add_rejects_a_wrong_grad_shape_and_dtype() -> None:
    x, dy = Tensor(np.ones((6, 5), np.float32)), Tensor(np.ones((6, 4), np.float32))
    with pytest.raises(ValueError, match=r"npu_matmul_add_fp32: argument 'grad'.*\(4, 5\)"):
        npu_matmul_add_fp32(x, dy, Tensor(np.ones((5, 4), np.float32)))
    with pytest.raises(TypeError, match="argument 'grad'.*Float32"):
        npu_matmul_add_fp32(x, dy, Tensor(np.ones((4, 5), np.float16)))
    with pytest.raises(ValueError, match="argument 'grad_output'.*leading shape"):
        npu_matmul_add_fp32(x, Tensor(np.ones((7, 4), np.float32)), Tensor(np.ones((4, 5), np.float32)))
