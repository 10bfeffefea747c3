"""npu_fusion_attention: layouts, GQA, masks and sparse modes, pse, dropout, gradients, errors."""

from __future__ import annotations

from pathlib import Path

import mindspore
import numpy as np
import pytest
from _helpers import run_reference
from mindspore import Tensor

from mindspeed_ms.ops import npu_fusion_attention

B, N1, N2, SQ, SK, D = 2, 4, 2, 6, 6, 8
SCALE = 1.0 / np.sqrt(D)


def to_layout(t: np.ndarray, layout: str) -> np.ndarray:
    """BNSD -> layout."""
    b, n, s, d = t.shape
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(0, 2, 1, 3)
    if layout == "BSH":
        return t.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    return t.transpose(2, 0, 1, 3).reshape(s, b, n * d)


def ref_attention(q, k, v, scale, pse=None, mask=None):  # type: ignore[no-untyped-def]
    """float64 reference in BNSD; returns out, probs, row max, row sum."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2)
    s = (s + pse) * scale if pse is not None else s * scale
    if mask is not None:
        s = np.where(np.broadcast_to(mask, s.shape), -1e30, s)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(-1, keepdims=True)
    p = e / total
    return p @ v, p, m, total


def qkv(seed: int = 0, sq: int = SQ, sk: int = SK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((B, N1, sq, D)).astype(np.float32),
        rng.standard_normal((B, N2, sk, D)).astype(np.float32),
        rng.standard_normal((B, N2, sk, D)).astype(np.float32),
    )


def causal(sq: int = SQ, sk: int = SK) -> np.ndarray:
    return np.triu(np.ones((sq, sk), bool), 1)


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
def test_attention_with_gqa_and_causal_mask_matches_numpy_in_every_layout(layout: str) -> None:
    q, k, v = qkv()
    res = npu_fusion_attention(
        Tensor(to_layout(q, layout)),
        Tensor(to_layout(k, layout)),
        Tensor(to_layout(v, layout)),
        N1,
        layout,
        atten_mask=Tensor(causal()),
        scale=SCALE,
    )
    assert len(res) == 7
    out, smax, ssum = res[0], res[1], res[2]
    ref_out, _, ref_m, ref_sum = ref_attention(q.astype(np.float64), k, v, SCALE, mask=causal())
    np.testing.assert_allclose(out.asnumpy(), to_layout(ref_out, layout), rtol=1e-5, atol=1e-6)
    assert smax.dtype == ssum.dtype == mindspore.float32
    assert tuple(smax.shape) == tuple(ssum.shape) == (B, N1, SQ, 8)
    np.testing.assert_allclose(smax.asnumpy(), np.broadcast_to(ref_m, (B, N1, SQ, 8)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ssum.asnumpy(), np.broadcast_to(ref_sum, (B, N1, SQ, 8)), rtol=1e-5)


@pytest.mark.parametrize(
    ("sparse_mode", "kwargs", "mask_fn"),
    [
        (2, {}, lambda i, j: j > i),
        (3, {}, lambda i, j: j - i > 2),
        (4, {"pre_tockens": 1, "next_tockens": 0}, lambda i, j: (j - i - 2 > 0) | (i - j + 2 > 1)),
    ],
)
def test_sparse_modes_build_their_masks_for_unequal_lengths(sparse_mode, kwargs, mask_fn) -> None:  # type: ignore[no-untyped-def]
    q, k, v = qkv(1, sq=4, sk=6)
    out = npu_fusion_attention(
        Tensor(q), Tensor(k), Tensor(v), N1, "BNSD", scale=SCALE, sparse_mode=sparse_mode, **kwargs
    )[0]
    i, j = np.arange(4)[:, None], np.arange(6)[None, :]
    ref = ref_attention(q.astype(np.float64), k, v, SCALE, mask=mask_fn(i, j))[0]
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_mode_0_applies_the_band_given_with_mindspeed_spellings_on_top_of_the_mask() -> None:
    q, k, v = qkv(2)
    none = np.zeros((SQ, SK), bool)
    out = npu_fusion_attention(
        Tensor(q), Tensor(k), Tensor(v), N1, "BNSD", atten_mask=Tensor(none), scale=SCALE, pre_tokens=2, next_tokens=0
    )[0]
    i, j = np.arange(SQ)[:, None], np.arange(SK)[None, :]
    ref = ref_attention(q.astype(np.float64), k, v, SCALE, mask=(j > i) | (i - j > 2))[0]
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_pse_is_added_before_scaling_and_a_per_batch_mask_broadcasts() -> None:
    q, k, v = qkv(3)
    rng = np.random.default_rng(4)
    pse = rng.standard_normal((1, N1, SQ, SK)).astype(np.float32)
    mask = rng.random((B, 1, SQ, SK)) < 0.3
    mask[..., 0] = False  # keep every row partly visible
    out = npu_fusion_attention(
        Tensor(q), Tensor(k), Tensor(v), N1, "BNSD", pse=Tensor(pse), atten_mask=Tensor(mask), scale=0.5
    )[0]
    ref = ref_attention(q.astype(np.float64), k, v, 0.5, pse=pse, mask=mask)[0]
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("dtype", "tol"), [(mindspore.float16, 3e-3), (mindspore.bfloat16, 2e-2)])
def test_half_inputs_keep_their_dtype_within_rounding(dtype: mindspore.dtype, tol: float) -> None:
    # Tolerance: computed in float32 from the rounded inputs; one rounding of the output (|out| < 2).
    q, k, v = (Tensor(a).astype(dtype) for a in qkv(5))
    out = npu_fusion_attention(q, k, v, N1, "BNSD", atten_mask=Tensor(causal()), scale=SCALE)[0]
    assert out.dtype == dtype
    f = lambda t: t.astype(mindspore.float32).asnumpy().astype(np.float64)  # noqa: E731
    ref = ref_attention(f(q), f(k), f(v), SCALE, mask=causal())[0]
    np.testing.assert_allclose(f(out), ref, rtol=tol, atol=tol)


def test_gradients_with_gqa_and_mask_match_the_analytic_gradients() -> None:
    q, k, v = qkv(6)
    g = np.random.default_rng(7).standard_normal((B, N1, SQ, D)).astype(np.float32)

    def loss(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
        out = npu_fusion_attention(a, b, c, N1, "BNSD", atten_mask=Tensor(causal()), scale=SCALE)[0]
        return (out * Tensor(g)).sum()

    dq, dk, dv = mindspore.grad(loss, grad_position=(0, 1, 2))(Tensor(q), Tensor(k), Tensor(v))
    q64, k64, v64, g64 = (a.astype(np.float64) for a in (q, k, v, g))
    _, p, _, _ = ref_attention(q64, k64, v64, SCALE, mask=causal())
    group = N1 // N2
    kr, vr = np.repeat(k64, group, axis=1), np.repeat(v64, group, axis=1)
    dp = g64 @ vr.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    ref_dq = SCALE * ds @ kr
    ref_dk = (SCALE * ds.transpose(0, 1, 3, 2) @ q64).reshape(B, N2, group, SK, D).sum(2)
    ref_dv = (p.transpose(0, 1, 3, 2) @ g64).reshape(B, N2, group, SK, D).sum(2)
    for got, ref in ((dq, ref_dq), (dk, ref_dk), (dv, ref_dv)):
        np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-4, atol=1e-5)


def test_dropout_keeps_the_expectation_and_drops_about_one_minus_keep_prob() -> None:
    # q = k = 0 gives uniform probabilities 1/sk; with v = 1 each output is (#kept / sk) / keep_prob,
    # a scaled Binomial(64, 0.5): mean 1, standard deviation 1/8 per row, 512 rows.
    sq = sk = 64
    q = Tensor(np.zeros((2, 4, sq, 16), np.float32))
    v = Tensor(np.ones((2, 4, sk, 16), np.float32))
    res = npu_fusion_attention(q, q, v, 4, "BNSD", keep_prob=0.5)
    rows = res[0].asnumpy()[..., 0]
    assert abs(rows.mean() - 1.0) < 0.03  # > 5 standard errors (1/8/sqrt(512) = 0.0055)
    assert 0.09 < rows.std() < 0.16
    assert res[6] == 2 * 4 * sq * sk


def test_attention_rejects_bad_layouts_head_counts_modes_and_masks() -> None:
    q, k, v = (Tensor(to_layout(a, "BSH")) for a in qkv())
    with pytest.raises(ValueError, match="npu_fusion_attention: argument 'input_layout'.*got 'NTD'"):
        npu_fusion_attention(q, k, v, N1, "NTD")
    with pytest.raises(ValueError, match="argument 'head_num'.*divisor of the hidden size 32.*got 5"):
        npu_fusion_attention(q, k, v, 5, "BSH")
    with pytest.raises(ValueError, match="argument 'key'.*dividing head_num 4, got 3"):
        k3 = Tensor(np.zeros((B, SK, 3 * D), np.float32))
        npu_fusion_attention(q, k3, k3, N1, "BSH")
    with pytest.raises(ValueError, match="argument 'sparse_mode'"):
        npu_fusion_attention(q, k, v, N1, "BSH", sparse_mode=5)
    with pytest.raises(TypeError, match="argument 'atten_mask'.*bool or uint8"):
        npu_fusion_attention(q, k, v, N1, "BSH", atten_mask=Tensor(np.zeros((SQ, SK), np.float32)))
    with pytest.raises(ValueError, match=r"argument 'atten_mask'.*\(6, 6\)"):
        npu_fusion_attention(q, k, v, N1, "BSH", atten_mask=Tensor(np.zeros((SQ, SK + 1), bool)))
    with pytest.raises(ValueError, match="argument 'pre_tokens'.*conflicts"):
        npu_fusion_attention(q, k, v, N1, "BSH", pre_tockens=3, pre_tokens=4)
    with pytest.raises(ValueError, match="argument 'keep_prob'"):
        npu_fusion_attention(q, k, v, N1, "BSH", keep_prob=0.0)


def test_attention_rejects_a_value_of_another_shape_than_key() -> None:
    q, k, _ = (Tensor(to_layout(a, "BSH")) for a in qkv())
    v = Tensor(np.zeros((B, SK + 1, N2 * D), np.float32))
    with pytest.raises(ValueError, match=r"npu_fusion_attention: argument 'value'.*shape of key \(2, 6, 16\)"):
        npu_fusion_attention(q, k, v, N1, "BSH")


def test_attention_rejects_a_pse_not_broadcastable_to_the_scores() -> None:
    q, k, v = (Tensor(to_layout(a, "BSH")) for a in qkv())
    pse = Tensor(np.zeros((1, N1, SQ, SK + 1), np.float32))
    with pytest.raises(ValueError, match=r"argument 'pse'.*broadcastable to \(2, 4, 6, 6\), got \(1, 4, 6, 7\)"):
        npu_fusion_attention(q, k, v, N1, "BSH", pse=pse)


def test_attention_rejects_a_scale_that_is_not_a_number() -> None:
    q, k, v = (Tensor(to_layout(a, "BSH")) for a in qkv())
    with pytest.raises(ValueError, match="argument 'scale'.*expected a float, got '0.35'"):
        npu_fusion_attention(q, k, v, N1, "BSH", scale="0.35")  # type: ignore[arg-type]


TORCH_ATTENTION = """
import sys
import numpy as np
import torch

data = np.load(sys.argv[1])
q, k, v = (torch.tensor(data[name], requires_grad=True) for name in ("q", "k", "v"))
keep = ~torch.tensor(data["mask"])  # npu_fusion_attention masks where True, PyTorch keeps where True
out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=float(data["scale"]),
                                                       enable_gqa=True)
(out * torch.tensor(data["g"])).sum().backward()
np.savez(sys.argv[2], out=out.detach().numpy(), dq=q.grad.numpy(), dk=k.grad.numpy(), dv=v.grad.numpy())
"""


def test_attention_and_its_gradients_match_pytorchs_scaled_dot_product_attention(tmp_path: Path) -> None:
    q, k, v = qkv(8)
    g = np.random.default_rng(9).standard_normal((B, N1, SQ, D)).astype(np.float32)
    want = run_reference(TORCH_ATTENTION, {"q": q, "k": k, "v": v, "g": g, "mask": causal(), "scale": SCALE},
                         tmp_path)

    def loss(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
        out = npu_fusion_attention(a, b, c, N1, "BNSD", atten_mask=Tensor(causal()), scale=SCALE)[0]
        return (out * Tensor(g)).sum()

    out = npu_fusion_attention(Tensor(q), Tensor(k), Tensor(v), N1, "BNSD", atten_mask=Tensor(causal()),
                               scale=SCALE)[0]
    dq, dk, dv = mindspore.grad(loss, grad_position=(0, 1, 2))(Tensor(q), Tensor(k), Tensor(v))
    np.testing.assert_allclose(out.asnumpy(), want["out"], rtol=1e-5, atol=1e-6)
    for name, got in (("dq", dq), ("dk", dk), ("dv", dv)):
        np.testing.assert_allclose(got.asnumpy(), want[name], rtol=1e-4, atol=1e-5, err_msg=name)
