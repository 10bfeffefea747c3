"""npu_swiglu: composite against NumPy, gradients, dtypes, argument errors."""

from __future__ import annotations

from pathlib import Path

import mindspore
import numpy as np
import pytest
from _helpers import run_reference
from mindspore import Tensor

from mindspeed_ms.ops import npu_swiglu


def ref_swiglu(x: np.ndarray, dim: int) -> np.ndarray:
    a, b = np.split(x, 2, axis=dim)
    return a / (1.0 + np.exp(-a)) * b


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_swiglu_float32_matches_numpy_along_any_dimension(dim: int) -> None:
    x = np.random.default_rng(0).standard_normal((4, 6, 8)).astype(np.float32)
    y = npu_swiglu(Tensor(x), dim=dim)
    np.testing.assert_allclose(y.asnumpy(), ref_swiglu(x.astype(np.float64), dim), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("dtype", "tol"), [(mindspore.float16, 2e-3), (mindspore.bfloat16, 1.6e-2)])
def test_swiglu_half_inputs_keep_their_dtype_within_rounding(dtype: mindspore.dtype, tol: float) -> None:
    # Tolerance: one rounding of the output to the half type.
    x = Tensor(np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)).astype(dtype)
    y = npu_swiglu(x)
    assert y.dtype == dtype
    assert tuple(y.shape) == (3, 8)
    ref = ref_swiglu(x.astype(mindspore.float32).asnumpy().astype(np.float64), -1)
    np.testing.assert_allclose(y.astype(mindspore.float32).asnumpy(), ref, rtol=tol, atol=tol)


def test_swiglu_gradient_matches_the_analytic_gradient() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 10)).astype(np.float32)
    w = rng.standard_normal((3, 5)).astype(np.float32)
    dx = mindspore.grad(lambda t: (npu_swiglu(t) * Tensor(w)).sum())(Tensor(x))
    a, b = np.split(x.astype(np.float64), 2, axis=-1)
    s = 1.0 / (1.0 + np.exp(-a))
    ref = np.concatenate([w * b * (s + a * s * (1 - s)), w * a * s], axis=-1)
    np.testing.assert_allclose(dx.asnumpy(), ref, rtol=1e-4, atol=1e-6)


def test_swiglu_rejects_an_odd_split_dimension_and_a_bad_dim() -> None:
    with pytest.raises(ValueError, match=r"npu_swiglu: argument 'x'.*even size along dim -1.*\(2, 7\)"):
        npu_swiglu(Tensor(np.ones((2, 7), np.float32)))
    with pytest.raises(ValueError, match="argument 'dim'"):
        npu_swiglu(Tensor(np.ones((2, 8), np.float32)), dim=2)


TORCH_SWIGLU = """
import sys
import numpy as np
import torch

data = np.load(sys.argv[1])
x = torch.tensor(data["x"], requires_grad=True)
a, b = x.chunk(2, dim=-1)
y = torch.nn.functional.silu(a) * b
(y * torch.tensor(data["w"])).sum().backward()
np.savez(sys.argv[2], y=y.detach().numpy(), dx=x.grad.numpy())
"""


def test_swiglu_and_its_gradient_match_pytorchs_silu_gate(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 12)).astype(np.float32)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    want = run_reference(TORCH_SWIGLU, {"x": x, "w": w}, tmp_path)
    y = npu_swiglu(Tensor(x))
    dx = mindspore.grad(lambda t: (npu_swiglu(t) * Tensor(w)).sum())(Tensor(x))
    np.testing.assert_allclose(y.asnumpy(), want["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx.asnumpy(), want["dx"], rtol=1e-4, atol=1e-6)
