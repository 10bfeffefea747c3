"""npu_fusion_attention_grad: the backward from saved statistics against PyTorch autograd, in every layout and mask
MindSpeed's context parallelism uses, and across ring-attention key blocks with the merged statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mindspore
import numpy as np
import pytest
from _helpers import run_reference
from mindspore import Tensor

from mindspeed_ms.errors import OpUnavailableError
from mindspeed_ms.ops import OpArgumentError, npu_fusion_attention, npu_fusion_attention_grad

B, N1, N2, D = 2, 4, 2, 8
SCALE = 0.35

# PyTorch autograd of manual softmax attention (float32, BNSD): masked where True, pse added before scaling.
TORCH_GRADS = """
import sys
import numpy as np
import torch

data = np.load(sys.argv[1])
results = {}
for name in data["names"]:
    q, k, v = (torch.tensor(data[name + "_" + x], requires_grad=True) for x in "qkv")
    pse = torch.tensor(data[name + "_pse"], requires_grad=True) if name + "_pse" in data else None
    group = q.shape[1] // k.shape[1]
    scores = q @ k.repeat_interleave(group, 1).transpose(-1, -2)
    scores = (scores + pse if pse is not None else scores) * float(data["scale"])
    scores = scores.masked_fill(torch.tensor(data[name + "_mask"]), float("-inf"))
    out = torch.softmax(scores, -1) @ v.repeat_interleave(group, 1)
    (out * torch.tensor(data[name + "_g"])).sum().backward()
    results.update({name + "_out": out.detach().numpy(), name + "_dq": q.grad.numpy(), name + "_dk": k.grad.numpy(),
                    name + "_dv": v.grad.numpy()})
    if pse is not None:
        results[name + "_dpse"] = pse.grad.numpy()
np.savez(sys.argv[2], **results)
"""


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


def from_layout(t: np.ndarray, layout: str, heads: int) -> np.ndarray:
    """layout -> BNSD."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(0, 2, 1, 3)
    if layout == "BSH":
        b, s, h = t.shape
        return t.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    s, b, h = t.shape
    return t.reshape(s, b, heads, h // heads).transpose(1, 2, 0, 3)


def band(sq: int, sk: int, fn: Any) -> np.ndarray:
    i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
    return np.asarray(fn(i, j), bool)


# name -> (layout, sq, sk, forward keywords besides scale, the mask they imply, with pse)
CASES: dict[str, tuple[str, int, int, dict[str, Any], np.ndarray, bool]] = {
    # MindSpeed's ring steps: the diagonal block (sparse 3 with its mask), a full block (sparse 0, band = sk)
    "sbh_diag": ("SBH", 6, 6, {"atten_mask": np.triu(np.ones((6, 6), bool), 1), "sparse_mode": 3,
                               "pre_tockens": 6, "next_tockens": 0}, band(6, 6, lambda i, j: j > i), False),
    "sbh_full": ("SBH", 8, 4, {"pre_tockens": 4, "next_tockens": 4}, band(8, 4, lambda i, j: j < 0), False),
    "bnsd_diag": ("BNSD", 6, 6, {"atten_mask": np.triu(np.ones((6, 6), bool), 1), "sparse_mode": 3,
                                 "pre_tockens": 6, "next_tockens": 0}, band(6, 6, lambda i, j: j > i), False),
    "bnsd_general": ("BNSD", 6, 4, {"atten_mask": band(6, 4, lambda i, j: (i + j) % 3 == 0), "sparse_mode": 1},
                     band(6, 4, lambda i, j: (i + j) % 3 == 0), False),
    "bsh_causal2": ("BSH", 4, 6, {"sparse_mode": 2}, band(4, 6, lambda i, j: j > i), False),
    "bsnd_band_pse": ("BSND", 6, 6, {"atten_mask": np.zeros((6, 6), bool), "pre_tockens": 2, "next_tockens": 0},
                      band(6, 6, lambda i, j: (j > i) | (i - j > 2)), True),
}


def _grad_inputs(name: str, sq: int, sk: int, with_pse: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, name)))
    arrays = {"q": rng.standard_normal((B, N1, sq, D)), "k": rng.standard_normal((B, N2, sk, D)),
              "v": rng.standard_normal((B, N2, sk, D)), "g": rng.standard_normal((B, N1, sq, D))}
    if with_pse:
        arrays["pse"] = rng.standard_normal((1, N1, sq, sk))
    return {f"{name}_{key}": value.astype(np.float32) for key, value in arrays.items()}


@pytest.fixture(scope="module")
def torch_grads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    inputs: dict[str, Any] = {"names": np.array(list(CASES)), "scale": SCALE}
    for name, (_, sq, sk, _, mask, with_pse) in CASES.items():
        inputs.update(_grad_inputs(name, sq, sk, with_pse))
        inputs[f"{name}_mask"] = mask
    return {**inputs, **run_reference(TORCH_GRADS, inputs, tmp_path_factory.mktemp("grads"))}


@pytest.mark.parametrize("name", list(CASES))
def test_grad_from_the_forwards_statistics_matches_pytorch_autograd(name: str, torch_grads: dict) -> None:
    layout, _, _, kwargs, _, with_pse = CASES[name]
    q, k, v, g = (Tensor(to_layout(torch_grads[f"{name}_{x}"], layout)) for x in "qkvg")
    extra = {key: Tensor(value) if isinstance(value, np.ndarray) else value for key, value in kwargs.items()}
    pse = Tensor(torch_grads[f"{name}_pse"]) if with_pse else None
    out, smax, ssum = npu_fusion_attention(q, k, v, N1, layout, pse=pse, scale=SCALE, **extra)[:3]
    np.testing.assert_allclose(from_layout(out.asnumpy(), layout, N1), torch_grads[f"{name}_out"], rtol=1e-5,
                               atol=1e-5)
    dq, dk, dv, dpse = npu_fusion_attention_grad(q, k, v, g, N1, layout, pse=pse, softmax_max=smax, softmax_sum=ssum,
                                                 attention_in=out, scale_value=SCALE, **extra)
    for grad, heads, what in ((dq, N1, "dq"), (dk, N2, "dk"), (dv, N2, "dv")):
        np.testing.assert_allclose(from_layout(grad.asnumpy(), layout, heads), torch_grads[f"{name}_{what}"],
                                   rtol=1e-4, atol=1e-5, err_msg=what)
    if with_pse:
        np.testing.assert_allclose(dpse.asnumpy(), torch_grads[f"{name}_dpse"], rtol=1e-4, atol=1e-5)
    else:
        assert tuple(dpse.shape) == (0,)


def _merge(first: tuple, second: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ring attention's update of (out BNSD, max, sum) over two key blocks (MindSpeed's forward_update)."""
    (o1, m1, s1), (o2, m2, s2) = ((o.asnumpy().astype(np.float64), m.asnumpy(), s.asnumpy()) for o, m, s in
                                  (first, second))
    m = np.maximum(m1, m2)
    w1, w2 = s1 * np.exp(m1 - m), s2 * np.exp(m2 - m)
    total = w1 + w2
    out = o1 * (w1 / total)[..., :1] + o2 * (w2 / total)[..., :1]
    return out.astype(np.float32), m.astype(np.float32), total.astype(np.float32)


def test_ring_blocks_with_merged_statistics_sum_to_the_full_causal_gradient(tmp_path: Path) -> None:
    """Two key blocks of a causal attention, each forward alone, merged, each backward with the merged statistics
    and output (the second block masks the first rows entirely): the summed dq and the blocks' dk/dv are the
    gradient PyTorch's autograd gives the whole attention."""
    sq = 8
    inputs: dict[str, Any] = {"names": np.array(["ring"]), "scale": SCALE,
                              "ring_mask": band(sq, sq, lambda i, j: j > i)}
    inputs.update(_grad_inputs("ring", sq, sq, False))
    want = run_reference(TORCH_GRADS, inputs, tmp_path)
    q, g = Tensor(inputs["ring_q"]), Tensor(inputs["ring_g"])
    blocks = [(slice(0, 4), band(sq, 4, lambda i, j: j > i)), (slice(4, 8), band(sq, 4, lambda i, j: j + 4 > i))]
    kv = [(Tensor(inputs["ring_k"][:, :, cols]), Tensor(inputs["ring_v"][:, :, cols]), Tensor(mask))
          for cols, mask in blocks]
    parts = [npu_fusion_attention(q, k, v, N1, "BNSD", atten_mask=mask, scale=SCALE)[:3] for k, v, mask in kv]
    out, smax, ssum = (Tensor(a) for a in _merge(*parts))
    np.testing.assert_allclose(out.asnumpy(), want["ring_out"], rtol=1e-5, atol=1e-5)
    grads = [npu_fusion_attention_grad(q, k, v, g, N1, "BNSD", atten_mask=mask, softmax_max=smax, softmax_sum=ssum,
                                       attention_in=out, scale_value=SCALE) for k, v, mask in kv]
    np.testing.assert_allclose(grads[0][0].asnumpy() + grads[1][0].asnumpy(), want["ring_dq"], rtol=1e-4, atol=1e-5)
    for index, what in ((1, "dk"), (2, "dv")):
        got = np.concatenate([grads[0][index].asnumpy(), grads[1][index].asnumpy()], axis=2)
        np.testing.assert_allclose(got, want[f"ring_{what}"], rtol=1e-4, atol=1e-5, err_msg=what)


def test_half_inputs_give_gradients_of_their_dtype() -> None:
    rng = np.random.default_rng(3)
    q, k, v, g = (Tensor(rng.standard_normal((1, 6, 2 * D)).astype(np.float32)).astype(mindspore.bfloat16)
                  for _ in range(4))
    out, smax, ssum = npu_fusion_attention(q, k, v, 2, "SBH", sparse_mode=2, scale=SCALE)[:3]
    dq, dk, dv, _ = npu_fusion_attention_grad(q, k, v, g, 2, "SBH", sparse_mode=2, softmax_max=smax,
                                              softmax_sum=ssum, attention_in=out, scale_value=SCALE)
    assert dq.dtype == dk.dtype == dv.dtype == mindspore.bfloat16
    assert tuple(dq.shape) == tuple(dk.shape) == (1, 6, 2 * D)


def test_grad_refuses_dropout_and_missing_or_misshaped_saved_tensors() -> None:
    rng = np.random.default_rng(5)
    q, k, v = (Tensor(rng.standard_normal((B, N1, 4, D)).astype(np.float32)) for _ in range(3))
    out, smax, ssum = npu_fusion_attention(q, k, v, N1, "BNSD")[:3]
    saved = {"softmax_max": smax, "softmax_sum": ssum, "attention_in": out}
    with pytest.raises(OpUnavailableError, match="--attention-dropout 0.0") as caught:
        npu_fusion_attention_grad(q, k, v, out, N1, "BNSD", keep_prob=0.9, **saved)
    assert isinstance(caught.value, NotImplementedError)
    with pytest.raises(OpArgumentError, match="argument 'softmax_sum'.*got None"):
        npu_fusion_attention_grad(q, k, v, out, N1, "BNSD", softmax_max=smax, attention_in=out)
    with pytest.raises(OpArgumentError, match=r"argument 'softmax_max'.*\(2, 4, 4, 8\).*got \(2, 4, 3, 8\)"):
        npu_fusion_attention_grad(q, k, v, out, N1, "BNSD", **{**saved, "softmax_max": smax[:, :, :3]})
    with pytest.raises(OpArgumentError, match=r"argument 'dy'.*query's shape"):
        npu_fusion_attention_grad(q, k, v, out[:, :, :3], N1, "BNSD", **saved)
    with pytest.raises(OpArgumentError, match="argument 'input_layout'.*'TND'"):
        npu_fusion_attention_grad(q, k, v, out, N1, "TND", **saved)
