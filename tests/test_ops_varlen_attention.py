"""npu_fusion_attention in the TND layout (packed sequences, MindSpeed-LLM's --reset-position-ids): output and
gradients against PyTorch's scaled_dot_product_attention run on each sequence alone, with GQA and a value head dim
smaller than the query's (multi-latent attention's --mla-fa-without-pad); the refusals."""

from __future__ import annotations

from pathlib import Path

import mindspore
import numpy as np
import pytest
from _helpers import run_reference
from mindspore import Tensor

from mindspeed_ms.ops import OpArgumentError, npu_fusion_attention
from mindspeed_ms.ops.varlen_attention import segment_mask

N1, N2, D, DV = 4, 2, 6, 4
ENDS = [5, 7, 13, 16]  # four sequences of 5, 2, 6 and 3 tokens, packed
SCALE = 0.4

# Each sequence on its own through PyTorch's attention, causal within it (or not), then packed again.
TORCH_SEQUENCES = """
import sys
import numpy as np
import torch

data = np.load(sys.argv[1])
q, k, v = (torch.tensor(data[x], requires_grad=True) for x in "qkv")
outs, start = [], 0
for end in data["ends"].tolist():
    qs, ks, vs = (t[start:end].transpose(0, 1) for t in (q, k, v))  # (N, s, D)
    outs.append(torch.nn.functional.scaled_dot_product_attention(
        qs, ks, vs, is_causal=bool(data["causal"]), scale=float(data["scale"]), enable_gqa=True).transpose(0, 1))
    start = end
out = torch.cat(outs)
(out * torch.tensor(data["g"])).sum().backward()
np.savez(sys.argv[2], out=out.detach().numpy(), dq=q.grad.numpy(), dk=k.grad.numpy(), dv=v.grad.numpy())
"""


def packed(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = ENDS[-1]
    return {"q": rng.standard_normal((t, N1, D)).astype(np.float32),
            "k": rng.standard_normal((t, N2, D)).astype(np.float32),
            "v": rng.standard_normal((t, N2, DV)).astype(np.float32),
            "g": rng.standard_normal((t, N1, DV)).astype(np.float32)}


# MindSpeed-LLM's call: sparse mode 4 with next_tockens 0 (causal per sequence); modes 2 and 3 are the same shape
# for self-attention; mode 0 attends to the whole sequence.
@pytest.mark.parametrize(("keywords", "causal"), [
    ({"sparse_mode": 4, "pre_tockens": 65536, "next_tockens": 0}, True),
    ({"sparse_mode": 3}, True),
    ({"sparse_mode": 0}, False),
])
def test_packed_sequences_and_gradients_match_pytorch_per_sequence(tmp_path: Path, keywords: dict[str, int],
                                                                   causal: bool) -> None:
    data = packed(3)
    want = run_reference(TORCH_SEQUENCES, {**data, "ends": np.array(ENDS), "causal": causal, "scale": SCALE},
                         tmp_path)

    def attention(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, ...]:
        return npu_fusion_attention(q, k, v, N1, "TND", scale=SCALE, actual_seq_qlen=ENDS, actual_seq_kvlen=ENDS,
                                    **keywords)

    def loss(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        return (attention(q, k, v)[0] * Tensor(data["g"])).sum()

    inputs = [Tensor(data[x]) for x in "qkv"]
    out, smax, ssum = attention(*inputs)[:3]
    np.testing.assert_allclose(out.asnumpy(), want["out"], rtol=1e-5, atol=1e-6)
    assert smax.shape == ssum.shape == (ENDS[-1], N1, 8)
    assert smax.dtype == mindspore.float32
    grads = mindspore.grad(loss, grad_position=(0, 1, 2))(*inputs)
    for name, got in zip(("dq", "dk", "dv"), grads):
        np.testing.assert_allclose(got.asnumpy(), want[name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_the_offsets_may_come_as_a_tensor_and_bfloat16_keeps_its_dtype() -> None:
    data = packed(4)
    q, k, v = (Tensor(data[x]) for x in "qkv")
    want = npu_fusion_attention(q, k, v, N1, "TND", actual_seq_qlen=ENDS, actual_seq_kvlen=ENDS, sparse_mode=3)[0]
    ends = Tensor(np.array(ENDS, np.int64))
    half = npu_fusion_attention(*(t.astype(mindspore.bfloat16) for t in (q, k, v)), N1, "TND", sparse_mode=3,
                                actual_seq_qlen=ends, actual_seq_kvlen=ends)[0]
    assert half.dtype == mindspore.bfloat16
    np.testing.assert_allclose(half.astype(mindspore.float32).asnumpy(), want.asnumpy(), atol=0.05)


def test_segment_mask_keeps_each_token_inside_its_own_sequence() -> None:
    mask = segment_mask([2, 5], [2, 5], lambda sq, sk: np.triu(np.ones((sq, sk), bool), 1))
    keep = ~mask
    assert keep[:2, :2].tolist() == [[True, False], [True, True]]
    assert not keep[2:, :2].any()
    assert not keep[:2, 2:].any()
    assert keep[4, 2:].all()
    assert not keep[2, 3]


def test_tnd_refuses_what_it_cannot_do() -> None:
    q, k, v = (Tensor(packed(5)[x]) for x in "qkv")
    with pytest.raises(OpArgumentError, match="actual_seq_qlen.*cumulative end offsets, got None"):
        npu_fusion_attention(q, k, v, N1, "TND", sparse_mode=3)
    with pytest.raises(OpArgumentError, match=r"actual_seq_kvlen.*finishing at the token count 16, got \[5, 15\]"):
        npu_fusion_attention(q, k, v, N1, "TND", sparse_mode=3, actual_seq_qlen=ENDS, actual_seq_kvlen=[5, 15])
    with pytest.raises(OpArgumentError, match="actual_seq_kvlen.*expected 4 sequences"):
        npu_fusion_attention(q, k, v, N1, "TND", sparse_mode=3, actual_seq_qlen=ENDS, actual_seq_kvlen=[16])
    with pytest.raises(OpArgumentError, match="sparse_mode.*got 1"):
        npu_fusion_attention(q, k, v, N1, "TND", sparse_mode=1, actual_seq_qlen=ENDS, actual_seq_kvlen=ENDS)
    with pytest.raises(OpArgumentError, match="sparse_mode.*got 0 with an atten_mask"):
        npu_fusion_attention(q, k, v, N1, "TND", atten_mask=Tensor(np.zeros((16, 16), bool)),
                             actual_seq_qlen=ENDS, actual_seq_kvlen=ENDS)
    with pytest.raises(OpArgumentError, match="head_num.*head count 4 in layout TND, got 2"):
        npu_fusion_attention(q, k, v, 2, "TND", sparse_mode=3, actual_seq_qlen=ENDS, actual_seq_kvlen=ENDS)
    with pytest.raises(OpArgumentError, match="pse.*not supported in the TND layout"):
        npu_fusion_attention(q, k, v, N1, "TND", sparse_mode=3, pse=Tensor(np.zeros((1, N1, 16, 16), np.float32)),
                             actual_seq_qlen=ENDS, actual_seq_kvlen=ENDS)
    with pytest.raises(OpArgumentError, match="sequence 1 has 2 queries and no keys"):
        npu_fusion_attention(q, k, v, N1, "TND", sparse_mode=3, actual_seq_qlen=ENDS,
                             actual_seq_kvlen=[7, 7, 13, 16])


def test_sbh_with_a_value_head_dim_of_its_own_matches_pytorch(tmp_path: Path) -> None:
    # MindSpeed-LLM's multi-latent attention without --reset-position-ids: SBH, value heads narrower than query's
    data = packed(6)
    want = run_reference(TORCH_SEQUENCES, {**data, "ends": np.array([16]), "causal": True, "scale": SCALE},
                         tmp_path)
    q, k, v = (Tensor(data[x].reshape(16, 1, -1)) for x in "qkv")
    out = npu_fusion_attention(q, k, v, N1, "SBH", scale=SCALE, sparse_mode=2)[0]
    assert out.shape == (16, 1, N1 * DV)
    np.testing.assert_allclose(out.asnumpy().reshape(16, N1, DV), want["out"], rtol=1e-5, atol=1e-6)
