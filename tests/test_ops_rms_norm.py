"""npu_rms_norm: composite against a NumPy reference, gradients, dtypes, argument errors."""

from __future__ import annotations

from pathlib import Path

import mindspore
import numpy as np
import pytest
from _helpers import run_reference
from mindspore import Tensor

from mindspeed_ms.ops import npu_rms_norm


def ref_rms_norm(x: np.ndarray, gamma: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    axes = tuple(range(x.ndim - gamma.ndim, x.ndim))
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps)
    return x * rstd * gamma, rstd


def test_rms_norm_float32_matches_numpy_with_float32_rstd() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    gamma = rng.standard_normal(16).astype(np.float32)
    y, rstd = npu_rms_norm(Tensor(x), Tensor(gamma), 1e-5)
    ry, rr = ref_rms_norm(x.astype(np.float64), gamma.astype(np.float64), 1e-5)
    assert rstd.dtype == mindspore.float32
    assert tuple(rstd.shape) == (2, 5, 1)
    np.testing.assert_allclose(y.asnumpy(), ry, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd.asnumpy(), rr, rtol=1e-5)


def test_rms_norm_normalises_over_all_dimensions_gamma_spans() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 6)).astype(np.float32)
    gamma = rng.standard_normal((4, 6)).astype(np.float32)
    y, rstd = npu_rms_norm(Tensor(x), Tensor(gamma))
    ry, rr = ref_rms_norm(x.astype(np.float64), gamma.astype(np.float64), 1e-6)
    assert tuple(rstd.shape) == (3, 1, 1)
    np.testing.assert_allclose(y.asnumpy(), ry, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("dtype", "tol"), [(mindspore.float16, 2e-3), (mindspore.bfloat16, 1.6e-2)])
def test_rms_norm_half_inputs_keep_their_dtype_within_rounding(dtype: mindspore.dtype, tol: float) -> None:
    # Tolerance: one rounding of the output to the half type (fp16 eps 2^-10, bf16 eps 2^-7) plus slack.
    rng = np.random.default_rng(2)
    x = Tensor(rng.standard_normal((4, 32)).astype(np.float32)).astype(dtype)
    gamma = Tensor(rng.standard_normal(32).astype(np.float32)).astype(dtype)
    y, rstd = npu_rms_norm(x, gamma)
    assert y.dtype == dtype
    assert rstd.dtype == mindspore.float32
    xr = x.astype(mindspore.float32).asnumpy().astype(np.float64)
    gr = gamma.astype(mindspore.float32).asnumpy().astype(np.float64)
    ry, _ = ref_rms_norm(xr, gr, 1e-6)
    np.testing.assert_allclose(y.astype(mindspore.float32).asnumpy(), ry, rtol=tol, atol=tol)


def test_rms_norm_gradients_match_the_analytic_gradient() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    gamma = rng.standard_normal(8).astype(np.float32)
    w = rng.standard_normal((3, 8)).astype(np.float32)

    def loss(a: Tensor, g: Tensor) -> Tensor:
        return (npu_rms_norm(a, g, 1e-6)[0] * Tensor(w)).sum()

    dx, dg = mindspore.grad(loss, grad_position=(0, 1))(Tensor(x), Tensor(gamma))
    x64, g64, w64 = x.astype(np.float64), gamma.astype(np.float64), w.astype(np.float64)
    r = 1.0 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + 1e-6)
    wg = w64 * g64
    ref_dx = r * wg - x64 * r**3 * np.mean(wg * x64, axis=-1, keepdims=True)
    ref_dg = np.sum(w64 * x64 * r, axis=0)
    np.testing.assert_allclose(dx.asnumpy(), ref_dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dg.asnumpy(), ref_dg, rtol=1e-4, atol=1e-5)


def test_rms_norm_rejects_gamma_of_the_wrong_length_naming_the_expected_shape() -> None:
    with pytest.raises(ValueError, match=r"npu_rms_norm: argument 'gamma'.*\(8,\)"):
        npu_rms_norm(Tensor(np.ones((2, 8), np.float32)), Tensor(np.ones(7, np.float32)))


def test_rms_norm_rejects_integer_input_and_bad_epsilon() -> None:
    with pytest.raises(TypeError, match="npu_rms_norm: argument 'x'.*dtype"):
        npu_rms_norm(Tensor(np.ones((2, 8), np.int32)), Tensor(np.ones(8, np.float32)))
    with pytest.raises(ValueError, match="argument 'epsilon'"):
        npu_rms_norm(Tensor(np.ones((2, 8), np.float32)), Tensor(np.ones(8, np.float32)), 0.0)


TORCH_RMS_NORM = """
import sys
import numpy as np
import torch

data = np.load(sys.argv[1])
x, gamma = (torch.tensor(data[name], requires_grad=True) for name in ("x", "gamma"))
y = torch.nn.functional.rms_norm(x, tuple(gamma.shape), gamma, 1e-6)
(y * torch.tensor(data["w"])).sum().backward()
np.savez(sys.argv[2], y=y.detach().numpy(), dx=x.grad.numpy(), dgamma=gamma.grad.numpy())
"""


def test_rms_norm_and_its_gradients_match_pytorchs_rms_norm(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 16)).astype(np.float32)
    gamma = rng.standard_normal(16).astype(np.float32)
    w = rng.standard_normal((2, 3, 16)).astype(np.float32)
    want = run_reference(TORCH_RMS_NORM, {"x": x, "gamma": gamma, "w": w}, tmp_path)

    def loss(a: Tensor, g: Tensor) -> Tensor:
        return (npu_rms_norm(a, g, 1e-6)[0] * Tensor(w)).sum()

    y, _ = npu_rms_norm(Tensor(x), Tensor(gamma), 1e-6)
    dx, dgamma = mindspore.grad(loss, grad_position=(0, 1))(Tensor(x), Tensor(gamma))
    np.testing.assert_allclose(y.asnumpy(), want["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx.asnumpy(), want["dx"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dgamma.asnumpy(), want["dgamma"], rtol=1e-4, atol=1e-5)
