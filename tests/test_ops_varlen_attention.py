"""npu_fusion_attention in the TND layout (packed sequences, MindSpeed-LLM's --reset-position-ids): output and
gradients against PyTorch's scaled_dot_product_attention run on each sequence alone, with GQA and a value head dim
smaller than the query's (multi-latent attention's --mla-fa-without-pad); the refusals."""

from __future__ import annotations

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

# Each case's sequences on their own through PyTorch's attention, causal within them (or not), then packed again.
TORCH_SEQUENCES = """
import sys
import numpy as np
import torch

data = np.load(sys.argv[1])
results = {}
for name in data["names"].tolist():
    q, k, v = (torch.tensor(data[name + "_" + x], requires_grad=True) for x in "qkv")
    outs, start = [], 0
    for end in data[name + "_ends"].tolist():
        qs, ks, vs = (t[start:end].transpose(0, 1) for t in (q, k, v))  # (N, s, D)
        outs.append(torch.nn.functional.scaled_dot_product_attention(
            qs, ks, vs, is_causal=bool(data[name + "_causal"]), scale=float(data["scale"]),
            enable_gqa=True).transpose(0, 1))
        start = end
    out = torch.cat(outs)
    (out * torch.tensor(data[name + "_g"])).sum().backward()
    results.update({name + "_out": out.detach().numpy(), name + "_dq": q.grad.numpy(), name + "_dk": k.grad.numpy(),
                    name + "_dv": v.grad.numpy()})
np.savez(sys.argv[2], **results)
"""


@pytest.fixture(scope="module")
def pytorch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """PyTorch's outputs and gradients: ``packed`` (four sequences, causal), ``full`` (the same, not causal) and
    ``one`` (a single causal sequence), each from :func:`packed`'s inputs."""
    given: dict[str, np.ndarray] = {"names": np.array(["packed", "full", "one"]), "scale": np.array(SCALE)}
    for name, seed, ends, causal in (("packed", 3, ENDS, True), ("full", 3, ENDS, False), ("one", 6, [16], True)):
        given.update({f"{name}_{key}": value for key, value in packed(seed).items()})
        given.update({f"{name}_ends": np.array(ends), f"{name}_causal": np.array(causal)})
    return run_reference(TORCH_SEQUENCES, given, tmp_path_factory.mktemp("varlen"))


def packed(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = ENDS[-1]
    return {"q": rng.standard_normal((t, N1, D)).astype(np.float32),
            "k": rng.standard_normal((t, N2, D)).astype(np.float32),
            "v": rng.standard_normal((t, N2, DV)).astype(np.float32),
            "g": rng.standard_normal((t, N1, DV)).astype(np.float32)}


# MindSpeed-LLM's call: sparse mode 4 with next_tockens 0 (causal per sequence); modes 2 and 3 are the same shape
# for self-attention; mode 0 attends to the whole sequence.
@pytest.mark.parametrize(("keywords", "case"), [
    ({"sparse_mode": 4, "pre_tockens": 65536, "next_tockens": 0}, "packed"),
    ({"sparse_mode": 3}, "packed"),
    ({"sparse_mode": 0}, "full"),
])
def test_packed_sequences_and_gradients_match_pytorch_per_sequence(pytorch: dict[str, np.ndarray],
                                                                   keywords: dict[str, int], case: str) -> None:
    data = packed(3)

    def attention(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, ...]:
        return npu_fusion_attention(q, k, v, N1, "TND", scale=SCALE, actual_seq_qlen=ENDS, actual_seq_kvlen=ENDS,
                                    **keywords)

    def loss(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        return (attention(q, k, v)[0] * Tensor(data["g"])).sum()

    inputs = [Tensor(data[x]) for x in "qkv"]
    out, smax, ssum = attention(*inputs)[:3]
    np.testing.assert_allclose(out.asnumpy(), pytorch[f"{case}_out"], rtol=1e-5, atol=1e-6)
    assert smax.shape == ssum.shape == (ENDS[-1], N1, 8)
    assert smax.dtype == mindspore.float32
    grads = mindspore.grad(loss, grad_position=(0, 1, 2))(*inputs)
    for name, got in zip(("dq", "dk", "dv"), grads):
        np.testing.assert_allclose(got.asnumpy(), pytorch[f"{case}_{name}"], rtol=1e-4, atol=1e-5, err_msg=name)


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


def test_sbh_with_a_value_head_dim_of_its_own_matches_pytorch(pytorch: dict[str, np.ndarray]) -> None:
    # MindSpeed-LLM's multi-latent attention without --reset-position-ids: SBH, value heads narrower than query's
    q, k, v = (Tensor(packed(6)[x].reshape(16, 1, -1)) for x in "qkv")
    out = npu_fusion_attention(q, k, v, N1, "SBH", scale=SCALE, sparse_mode=2)[0]
    assert out.shape == (16, 1, N1 * DV)
    np.testing.assert_allclose(out.asnumpy().reshape(16, N1, DV), pytorch["one_out"], rtol=1e-5, atol=1e-6)
