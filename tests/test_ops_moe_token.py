"""npu_moe_token_permute / unpermute: CANN conventions, top-k, dropping, gradients, errors."""

from __future__ import annotations

import mindspore
import numpy as np
import pytest
from mindspore import Tensor

from mindspeed_ms.ops import npu_moe_token_permute, npu_moe_token_unpermute


def ref_permute(tokens: np.ndarray, indices: np.ndarray, keep: int | None) -> tuple[np.ndarray, np.ndarray]:
    topk = 1 if indices.ndim == 1 else indices.shape[1]
    order = np.argsort(indices.reshape(-1), kind="stable")
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    rows = order if keep is None else order[:keep]
    return tokens[rows // topk], inverse


def ref_unpermute(permuted: np.ndarray, sorted_idx: np.ndarray, probs: np.ndarray | None) -> np.ndarray:
    padded = np.concatenate([permuted, np.zeros((1, permuted.shape[1]))])
    rows = padded[np.minimum(sorted_idx, permuted.shape[0])]
    if probs is None:
        return rows
    t, k = probs.shape
    return (rows.reshape(t, k, -1) * probs[..., None]).sum(1)


def routing(t: int = 6, k: int = 2, experts: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tokens = rng.standard_normal((t, 4)).astype(np.float32)
    indices = np.stack([rng.choice(experts, k, replace=False) for _ in range(t)]).astype(np.int32)
    probs = rng.random((t, k)).astype(np.float32)
    return tokens, indices, probs


@pytest.mark.parametrize("keep", [None, 7])
def test_permute_orders_rows_by_expert_stably_and_returns_the_inverse_permutation(keep: int | None) -> None:
    tokens, indices, _ = routing()
    permuted, sorted_idx = npu_moe_token_permute(Tensor(tokens), Tensor(indices), keep)
    ref_rows, ref_inverse = ref_permute(tokens, indices, keep)
    assert sorted_idx.dtype == mindspore.int32
    np.testing.assert_array_equal(sorted_idx.asnumpy(), ref_inverse)
    np.testing.assert_array_equal(permuted.asnumpy(), ref_rows)


def test_permute_with_1d_indices_means_top1() -> None:
    tokens, _, _ = routing()
    indices = np.array([2, 0, 1, 0, 2, 0], np.int64)
    permuted, sorted_idx = npu_moe_token_permute(Tensor(tokens), Tensor(indices))
    ref_rows, ref_inverse = ref_permute(tokens, indices, None)
    np.testing.assert_array_equal(permuted.asnumpy(), ref_rows)
    np.testing.assert_array_equal(sorted_idx.asnumpy(), ref_inverse)


@pytest.mark.parametrize("keep", [None, 9])
def test_unpermute_weights_rows_by_probs_and_drops_rows_past_the_end(keep: int | None) -> None:
    tokens, indices, probs = routing(seed=1)
    permuted, sorted_idx = npu_moe_token_permute(Tensor(tokens), Tensor(indices), keep)
    out = npu_moe_token_unpermute(permuted, sorted_idx, Tensor(probs))
    ref = ref_unpermute(permuted.asnumpy().astype(np.float64), sorted_idx.asnumpy(), probs.astype(np.float64))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    if keep is None:  # with no drops and probs summing to s, unpermute(permute(x)) == s * x
        ref_round_trip = tokens * probs.sum(1, keepdims=True)
        np.testing.assert_allclose(out.asnumpy(), ref_round_trip, rtol=1e-5, atol=1e-6)


def test_unpermute_without_probs_is_the_inverse_of_top1_permute() -> None:
    tokens, _, _ = routing()
    indices = np.array([1, 0, 1, 2, 0, 2], np.int32)
    permuted, sorted_idx = npu_moe_token_permute(Tensor(tokens), Tensor(indices))
    out = npu_moe_token_unpermute(permuted, sorted_idx, restore_shape=(2, 3, 4))
    np.testing.assert_array_equal(out.asnumpy(), tokens.reshape(2, 3, 4))


@pytest.mark.parametrize("dtype", [mindspore.float16, mindspore.bfloat16])
def test_permute_round_trip_with_half_tokens_and_float32_probs(dtype: mindspore.dtype) -> None:
    tokens, indices, probs = routing(seed=2)
    th = Tensor(tokens).astype(dtype)
    permuted, sorted_idx = npu_moe_token_permute(th, Tensor(indices))
    assert permuted.dtype == dtype
    out = npu_moe_token_unpermute(permuted, sorted_idx, Tensor(probs))
    assert out.dtype == dtype
    exact = th.astype(mindspore.float32).asnumpy() * probs.sum(1, keepdims=True)
    tol = 2e-3 if dtype == mindspore.float16 else 1.6e-2  # one rounding of the output to the half type
    np.testing.assert_allclose(out.astype(mindspore.float32).asnumpy(), exact, rtol=tol, atol=tol)


def test_permute_and_unpermute_gradients_match_the_analytic_gradients() -> None:
    tokens, indices, probs = routing(seed=3)
    g = np.random.default_rng(4).standard_normal((6, 4)).astype(np.float32)
    _, sorted_idx = npu_moe_token_permute(Tensor(tokens), Tensor(indices), 10)

    def loss(tok: Tensor, pr: Tensor) -> Tensor:
        permuted, s = npu_moe_token_permute(tok, Tensor(indices), 10)
        return (npu_moe_token_unpermute(permuted, s, pr) * Tensor(g)).sum()

    dtok, dprobs = mindspore.grad(loss, grad_position=(0, 1))(Tensor(tokens), Tensor(probs))
    kept = (sorted_idx.asnumpy() < 10).reshape(6, 2)  # pairs not dropped
    ref_dtok = ((probs * kept).sum(1, keepdims=True)) * g
    ref_dprobs = (g @ tokens.T).diagonal()[:, None] * kept
    np.testing.assert_allclose(dtok.asnumpy(), ref_dtok, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dprobs.asnumpy(), ref_dprobs, rtol=1e-5, atol=1e-6)


def test_permute_rejects_bad_arguments_naming_them() -> None:
    tokens, indices, _ = routing()
    with pytest.raises(ValueError, match=r"npu_moe_token_permute: argument 'indices'.*\(6,\) or \(6, topk\)"):
        npu_moe_token_permute(Tensor(tokens), Tensor(indices[:5]))
    with pytest.raises(ValueError, match="argument 'indices'.*non-negative"):
        npu_moe_token_permute(Tensor(tokens), Tensor(indices - 1))
    with pytest.raises(ValueError, match=r"argument 'num_out_tokens'.*\[0, 12\]"):
        npu_moe_token_permute(Tensor(tokens), Tensor(indices), 13)
    with pytest.raises(TypeError, match="argument 'indices'.*int32 or int64"):
        npu_moe_token_permute(Tensor(tokens), Tensor(indices.astype(np.float32)))
    with pytest.raises(ValueError, match="argument 'padded_mode'"):
        npu_moe_token_permute(Tensor(tokens), Tensor(indices), padded_mode=True)


def test_unpermute_rejects_out_of_range_indices_and_mismatched_probs() -> None:
    permuted = Tensor(np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"npu_moe_token_unpermute: argument 'sorted_indices'.*\[0, 4\)"):
        npu_moe_token_unpermute(permuted, Tensor(np.array([0, 1, 2, 4], np.int32)))
    with pytest.raises(ValueError, match="argument 'probs'.*num_tokens\\*topk == 4"):
        npu_moe_token_unpermute(permuted, Tensor(np.arange(4, dtype=np.int32)), Tensor(np.ones((3, 2), np.float32)))
    with pytest.raises(ValueError, match="argument 'restore_shape'"):
        npu_moe_token_unpermute(permuted, Tensor(np.arange(4, dtype=np.int32)), restore_shape=(5, 3))


def test_unpermute_rejects_more_permuted_rows_than_token_slots() -> None:
    permuted = Tensor(np.ones((5, 3), np.float32))
    with pytest.raises(ValueError, match="npu_moe_token_unpermute: argument 'permuted_tokens'.*at most 4 rows, got 5"):
        npu_moe_token_unpermute(permuted, Tensor(np.arange(4, dtype=np.int32)))
