"""npu_ring_attention_update (``--use-fused-ring-attention-update``) against what MindSpeed's context parallelism
computes without the flag, on real PyTorch: the merge of two partial attention results by their softmax statistics."""

from __future__ import annotations

from pathlib import Path

import mindspore
import numpy as np
import pytest
from _helpers import run_reference
from mindspore import Tensor

from mindspeed_ms.ops import OpArgumentError, npu_ring_attention_update

#: the unfused merge (MindSpeed's forward_update_without_fused, layout SBH), in PyTorch
TORCH_MERGE = """
import sys
import numpy as np
import torch

data = np.load(sys.argv[1])
t = {name: torch.tensor(data[name]) for name in data.files}
softmax_max = torch.maximum(t["prev_max"], t["cur_max"])
prev_scaled = t["prev_sum"] * torch.exp(t["prev_max"] - softmax_max)
cur_scaled = t["cur_sum"] * torch.exp(t["cur_max"] - softmax_max)
softmax_sum = prev_scaled + cur_scaled
b, n, s, _ = softmax_max.shape
d = t["prev_out"].shape[-1] // n

def per_channel(scale):
    return scale[..., 0].unsqueeze(3).repeat(1, 1, 1, d).permute(2, 0, 1, 3).reshape(s, b, n * d)

out = t["prev_out"] * per_channel(prev_scaled / softmax_sum) + t["cur_out"] * per_channel(cur_scaled / softmax_sum)
np.savez(sys.argv[2], out=out.numpy(), max=softmax_max.numpy(), sum=softmax_sum.numpy())
"""


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    s, b, n, d = 6, 2, 3, 4
    inputs = {}
    for side in ("prev", "cur"):
        inputs[f"{side}_out"] = rng.standard_normal((s, b, n * d)).astype(np.float32)
        row_max = rng.standard_normal((b, n, s, 1)).astype(np.float32) * 3
        row_sum = rng.uniform(0.5, 4.0, (b, n, s, 1)).astype(np.float32)
        inputs[f"{side}_max"] = np.repeat(row_max, 8, axis=-1)
        inputs[f"{side}_sum"] = np.repeat(row_sum, 8, axis=-1)
    return inputs


def test_the_merge_matches_mindspeeds_unfused_update_in_pytorch(tmp_path: Path) -> None:
    inputs = _inputs()
    want = run_reference(TORCH_MERGE, inputs, tmp_path)
    t = {name: Tensor(value) for name, value in inputs.items()}
    out, softmax_max, softmax_sum = npu_ring_attention_update(t["prev_out"], t["prev_max"], t["prev_sum"],
                                                              t["cur_out"], t["cur_max"], t["cur_sum"])
    np.testing.assert_allclose(out.asnumpy(), want["out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(softmax_max.asnumpy(), want["max"], rtol=0, atol=0)
    np.testing.assert_allclose(softmax_sum.asnumpy(), want["sum"], rtol=1e-6, atol=1e-6)


def test_a_bfloat16_output_keeps_its_dtype() -> None:
    t = {name: Tensor(value) for name, value in _inputs().items()}
    prev = t["prev_out"].astype(mindspore.bfloat16)
    out, _, _ = npu_ring_attention_update(prev, t["prev_max"], t["prev_sum"], t["cur_out"].astype(mindspore.bfloat16),
                                          t["cur_max"], t["cur_sum"])
    assert out.dtype == mindspore.bfloat16


def test_packed_sequences_and_misfit_shapes_are_refused() -> None:
    t = {name: Tensor(value) for name, value in _inputs().items()}
    with pytest.raises(OpArgumentError, match="--use-fused-ring-attention-update"):
        npu_ring_attention_update(t["prev_out"], t["prev_max"], t["prev_sum"], t["cur_out"], t["cur_max"],
                                  t["cur_sum"], None, "TND")
    with pytest.raises(OpArgumentError, match="does not fit"):
        npu_ring_attention_update(t["prev_out"][:3], t["prev_max"], t["prev_sum"], t["cur_out"][:3], t["cur_max"],
                                  t["cur_sum"])
