"""mindspeed_ms.compat.host_rope: megatron-core's ``apply_rotary_pos_emb`` as one host Function computes what
PyTorch computes (megatron's own function in the reference interpreter, the same inputs: forward and the input's
gradient, halves and interleaved pairs, a piece of a split as megatron's query is), and the same bits as megatron's
code on MindSpore's kernels (the path it replaces); the calls it does not take (a partial rotary dimension, packed
sequences, mscale) run megatron's function."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _helpers import ROOT, reference_python, run_python, subprocess_env

_SCRIPT = '''
import sys
import numpy as np
import mindspeed_ms.adaptor
from mindspeed_ms.adaptation.framework import get_ai_framework
import torch
from megatron.core.models.common.embeddings import rope_utils
from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
from megatron.core.transformer import attention
from megatron.core.transformer.transformer_config import TransformerConfig

mindspore = get_ai_framework() == "mindspore"
given = np.load(sys.argv[1])
out = {}

def config(interleaved):
    return TransformerConfig(num_layers=1, hidden_size=64, num_attention_heads=4, use_cpu_initialization=True,
                             rotary_interleaved=interleaved)

def run(case, interleaved=False, percent=1.0, mscale=1.0, split=False, function=attention.apply_rotary_pos_emb):
    x = given["x"]
    freqs = RotaryEmbedding(kv_channels=16, rotary_percent=percent, rotary_interleaved=interleaved,
                            use_cpu_initialization=True)(x.shape[0])
    leaf = torch.tensor(np.concatenate([x, x * 0.5], axis=3) if split else x)
    leaf.requires_grad_(True)
    t = torch.split(leaf * 1, 16, dim=3)[0] if split else leaf * 1
    result = function(t, freqs, config(interleaved), mscale=mscale)
    result.backward(torch.tensor(given["g"]))
    out[case] = result.detach().numpy()
    out[case + "_grad"] = leaf.grad.numpy()
    if mindspore:
        from mindspeed_ms.compat import host_rope
        out[case + "_taken"] = np.array(host_rope.rope_of(result) is not None)
        # megatron's own code on MindSpore's kernels: what the host Function replaces
        leaf.grad = None
        t = torch.split(leaf * 1, 16, dim=3)[0] if split else leaf * 1
        result = rope_utils._apply_rotary_pos_emb_bshd(t, freqs, rotary_interleaved=interleaved, mscale=mscale)
        result.backward(torch.tensor(given["g"]))
        out[case + "_kernels"] = result.detach().numpy()
        out[case + "_kernels_grad"] = leaf.grad.numpy()

run("halves")
run("interleaved", interleaved=True)
run("split_piece", split=True)
run("rope_utils_name", function=rope_utils.apply_rotary_pos_emb)
run("partial_rotary", percent=0.5)
run("mscale", mscale=1.5)
np.savez(sys.argv[2], **out)
'''

TAKEN = {"halves": True, "interleaved": True, "split_piece": True, "rope_utils_name": True, "partial_rotary": False,
         "mscale": False}


def _run(python: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    stem = folder / Path(python).parent.parent.name
    script = folder / "rope.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, str(script), str(folder / "inputs.npz"), f"{stem}.npz", *extra, env=env)
    with np.load(f"{stem}.npz") as saved:
        return {name: saved[name] for name in saved.files}


def test_rotary_embedding_matches_megatron_on_pytorch_and_on_mindspores_kernels(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "inputs.npz", x=(rng.standard_normal((32, 2, 4, 16)) * 3).astype(np.float32),
             g=rng.standard_normal((32, 2, 4, 16)).astype(np.float32))
    expected = _run(reference_python(), tmp_path, [])
    got = _run(sys.executable, tmp_path, ["--ai-framework", "mindspore"])
    assert {case: bool(got[case + "_taken"]) for case in TAKEN} == TAKEN
    for case in TAKEN:
        for key in (case, case + "_grad"):
            assert got[key].dtype == np.float32, key
            assert got[key].shape == expected[key].shape, key
            # cos/sin are the framework's kernels' (within an ulp of PyTorch's): the products and the sum are
            # PyTorch's, so the results agree to an ulp or two of the values
            np.testing.assert_allclose(got[key], expected[key], rtol=2e-6, atol=2e-6, err_msg=key)
            # and they are the bits megatron's code computes on MindSpore's kernels
            assert np.array_equal(got[key], got[key.replace(case, case + "_kernels", 1)]), key
    assert not np.array_equal(got["halves"], got["interleaved"])  # the pairing changed what was computed
    assert np.abs(got["halves"] - np.load(tmp_path / "inputs.npz")["x"]).max() > 0.1  # a rotation happened


def test_the_arithmetic_is_the_rotation_and_its_transpose() -> None:
    """forward against float64, and the backward is the forward's transpose (<rope(x), g> == <x, rope^T(g)>)."""
    from mindspeed_ms.compat.host_rope import Rope, rope_backward, rope_forward

    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 2, 3, 6)).astype(np.float32)
    g = rng.standard_normal((8, 2, 3, 6)).astype(np.float32)
    freqs = rng.standard_normal((8, 1, 1, 6))
    for interleaved in (False, True):
        rope = Rope(np.cos(freqs).astype(np.float32), np.sin(freqs).astype(np.float32), interleaved)
        out, back = np.full(x.shape, np.nan, np.float32), np.full(x.shape, np.nan, np.float32)
        rope_forward(x, rope, out)
        rope_backward(g, rope, back)
        rotated = np.empty(x.shape)
        if interleaved:  # megatron's stack((-x2, x1), -1) of the odd/even elements
            rotated[..., 0::2], rotated[..., 1::2] = -x[..., 1::2], x[..., 0::2]
        else:  # cat((-x2, x1), -1) of the halves
            rotated[..., :3], rotated[..., 3:] = -x[..., 3:], x[..., :3]
        exact = x * rope.cos.astype(np.float64) + rotated * rope.sin.astype(np.float64)
        np.testing.assert_allclose(out, exact, rtol=1e-6, atol=1e-6)
        assert float((out.astype(np.float64) * g).sum()) == pytest.approx(float((x.astype(np.float64) * back).sum()),
                                                                            rel=1e-5)


def test_the_wrapper_keeps_a_function_that_is_not_megatrons() -> None:
    from mindspeed_ms.compat import host_rope

    def apply(t: object, freqs: object, config: object) -> object:  # MindSpeed's replacement, say
        return t

    assert host_rope.apply_wrapper(apply) is apply
    apply.__module__ = host_rope.MODULE
    wrapped = host_rope.apply_wrapper(apply)
    assert wrapped is not apply
    assert host_rope.apply_wrapper(wrapped) is wrapped
