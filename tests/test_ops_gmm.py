"""npu_gmm / npu_gmm_v2: grouped matmul against NumPy, gradients for x, weight and bias, errors."""

from __future__ import annotations

import mindspore
import numpy as np
import pytest
from mindspore import Tensor

from mindspeed_ms.ops import npu_gmm, npu_gmm_v2

SIZES = [3, 0, 4, 2]  # includes an empty group
ENDS = list(np.cumsum(SIZES))


def ref_gmm(x: np.ndarray, w: np.ndarray, ends: list[int], bias: np.ndarray | None = None) -> np.ndarray:
    out = np.zeros((x.shape[0], w.shape[2]))
    start = 0
    for g, end in enumerate(ends):
        out[start:end] = x[start:end] @ w[g] + (bias[g] if bias is not None else 0.0)
        start = end
    return out


def data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((sum(SIZES), 5)).astype(np.float32)
    w = rng.standard_normal((len(SIZES), 5, 3)).astype(np.float32)
    b = rng.standard_normal((len(SIZES), 3)).astype(np.float32)
    return x, w, b


@pytest.mark.parametrize("as_tensor", [False, True])
def test_gmm_with_cumulative_offsets_matches_numpy(as_tensor: bool) -> None:
    x, w, b = data()
    group_list = Tensor(np.array(ENDS, np.int64)) if as_tensor else ENDS
    y = npu_gmm(Tensor(x), Tensor(w), bias=Tensor(b), group_list=group_list)
    np.testing.assert_allclose(y.asnumpy(), ref_gmm(x.astype(np.float64), w, ENDS, b), rtol=1e-5, atol=1e-5)


def test_gmm_v2_takes_group_sizes_and_agrees_with_gmm() -> None:
    x, w, _ = data(1)
    y1 = npu_gmm(Tensor(x), Tensor(w), group_list=ENDS)
    y2 = npu_gmm_v2(Tensor(x), Tensor(w), group_list=Tensor(np.array(SIZES, np.int64)))
    np.testing.assert_array_equal(y1.asnumpy(), y2.asnumpy())
    np.testing.assert_allclose(y2.asnumpy(), ref_gmm(x.astype(np.float64), w, ENDS), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("dtype", "tol"), [(mindspore.float16, 5e-3), (mindspore.bfloat16, 4e-2)])
def test_gmm_half_inputs_keep_their_dtype_within_rounding(dtype: mindspore.dtype, tol: float) -> None:
    # Tolerance: output rounded to the half type, |values| up to ~6.
    x, w, _ = data(2)
    xh, wh = Tensor(x).astype(dtype), Tensor(w).astype(dtype)
    y = npu_gmm(xh, wh, group_list=ENDS)
    assert y.dtype == dtype
    f = lambda t: t.astype(mindspore.float32).asnumpy().astype(np.float64)  # noqa: E731
    np.testing.assert_allclose(f(y), ref_gmm(f(xh), f(wh), ENDS), rtol=tol, atol=tol)


def test_gmm_gradients_match_the_analytic_gradients() -> None:
    x, w, b = data(3)
    g = np.random.default_rng(4).standard_normal((sum(SIZES), 3)).astype(np.float32)

    def loss(a: Tensor, wt: Tensor, bt: Tensor) -> Tensor:
        return (npu_gmm(a, wt, bias=bt, group_list=ENDS) * Tensor(g)).sum()

    dx, dw, db = mindspore.grad(loss, grad_position=(0, 1, 2))(Tensor(x), Tensor(w), Tensor(b))
    ref_dx = np.zeros_like(x, dtype=np.float64)
    ref_dw = np.zeros_like(w, dtype=np.float64)
    ref_db = np.zeros_like(b, dtype=np.float64)
    start = 0
    for k, end in enumerate(ENDS):
        ref_dx[start:end] = g[start:end] @ w[k].T
        ref_dw[k] = x[start:end].T @ g[start:end]
        ref_db[k] = g[start:end].sum(0)
        start = end
    np.testing.assert_allclose(dx.asnumpy(), ref_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw.asnumpy(), ref_dw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(db.asnumpy(), ref_db, rtol=1e-5, atol=1e-5)


def test_gmm_rejects_a_group_list_that_does_not_end_at_the_token_count() -> None:
    x, w, _ = data()
    with pytest.raises(ValueError, match=r"npu_gmm: argument 'group_list'.*end at the token count 9"):
        npu_gmm(Tensor(x), Tensor(w), group_list=[3, 3, 7, 8])
    with pytest.raises(ValueError, match="non-decreasing"):
        npu_gmm(Tensor(x), Tensor(w), group_list=[3, 2, 7, 9])
    with pytest.raises(ValueError, match="expected 4 entries"):
        npu_gmm(Tensor(x), Tensor(w), group_list=[3, 9])
    with pytest.raises(ValueError, match="npu_gmm_v2: argument 'group_list'.*non-negative"):
        npu_gmm_v2(Tensor(x), Tensor(w), group_list=[3, -1, 5, 2])


def test_gmm_rejects_mismatched_shapes_and_group_types() -> None:
    x, w, b = data()
    with pytest.raises(ValueError, match=r"argument 'weight'.*\(4, 6, n\)"):
        npu_gmm(Tensor(np.ones((9, 6), np.float32)), Tensor(w), group_list=ENDS)
    with pytest.raises(ValueError, match=r"argument 'bias'.*\(4, 3\)"):
        npu_gmm(Tensor(x), Tensor(w), bias=Tensor(b[:, :2]), group_list=ENDS)
    with pytest.raises(ValueError, match="argument 'group_type'"):
        npu_gmm(Tensor(x), Tensor(w), group_list=ENDS, group_type=2)
    with pytest.raises(TypeError, match="argument 'group_list'"):
        npu_gmm(Tensor(x), Tensor(w), group_list=[3.0, 3.0, 7.0, 9.0])  # type: ignore[list-item]
