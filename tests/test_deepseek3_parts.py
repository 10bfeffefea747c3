"""What MindSpeed-LLM's DeepSeek-V3 example runs through, from megatron-core, on the MindSpore CPU backend with the
adaptor applied against real PyTorch: the sigmoid group-limited top-k router with expert bias and scaling (and its
gradient), the sequence-level auxiliary loss, the YaRN rotary embedding and multi-latent attention's rotary
application with its mscale, and the alltoall dispatcher's host copies inside ``torch.cuda.stream(side_stream)``
(MSAdapter's ``StreamCtx`` refused the CPU device; the reference is CPU PyTorch, whose one stream runs the copies
without a side stream). One script, run in both interpreters on the same inputs."""

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
{prelude}
import torch
from megatron.core.models.common.embeddings.rope_utils import _apply_rotary_pos_emb_bshd
from megatron.core.models.common.embeddings.yarn_rotary_pos_embedding import YarnRotaryEmbedding
from megatron.core.transformer.moe.moe_utils import sequence_load_balancing_loss_func, topk_softmax_with_capacity

given = np.load(sys.argv[1])
out = {{}}
# DeepSeek-V3's router (shrunk): 8 experts in 4 groups, the top 2 groups, top-2 experts, sigmoid scores, expert bias
logits = torch.tensor(given["logits"]).requires_grad_()
probs, routing_map, tokens_per_expert = topk_softmax_with_capacity(
    logits, 2, num_groups=4, group_topk=2, scaling_factor=2.5, score_function="sigmoid",
    expert_bias=torch.tensor(given["bias"]))
(probs * torch.tensor(given["weight"])).sum().backward()
out.update(probs=probs.detach().numpy(), routing_map=routing_map.numpy(), tokens=tokens_per_expert.numpy(),
           logits_grad=logits.grad.numpy())
scores = torch.sigmoid(torch.tensor(given["logits"])).requires_grad_()
aux = sequence_load_balancing_loss_func(scores, routing_map, 2, 6, 2, 1e-4)
aux.backward()
out.update(aux=aux.detach().numpy(), aux_grad=scores.grad.numpy())
# YaRN (factor 40 of 32 positions, the example's mscale settings) and MLA's rotary application with mscale
rope = YarnRotaryEmbedding(8, rotary_base=10000, scaling_factor=40, original_max_position_embeddings=32,
                           beta_fast=32, beta_slow=1, mscale=1.0, mscale_all_dim=1.0)
freqs, mscale = rope(12)
q = torch.tensor(given["q"]).requires_grad_()
rotated = _apply_rotary_pos_emb_bshd(q, freqs, rotary_interleaved=False, multi_latent_attention=True,
                                     mscale=mscale)
(rotated * torch.tensor(given["q_weight"])).sum().backward()
out.update(freqs=freqs.numpy(), mscale=np.array(mscale), rotated=rotated.detach().numpy(), q_grad=q.grad.numpy())
# the alltoall dispatcher's host copies (MindSpeed's maybe_dtoh_and_synchronize)
counts = torch.tensor(given["counts"])
{side_stream}
    host_counts = counts.to(torch.device("cpu"), non_blocking=True)
    input_splits = counts.reshape(2, -1).sum(dim=1).to(torch.device("cpu"), non_blocking=True).numpy()
{synchronize}
out.update(host_counts=host_counts.numpy(), input_splits=input_splits)
np.savez(sys.argv[2], **out)
'''

# CPU PyTorch has no CUDA device: YaRN's forward moves its frequencies to torch.cuda.current_device()
_REFERENCE_PRELUDE = "import torch\ntorch.cuda.current_device = lambda: 'cpu'"

_SIDE_STREAM = '''
stream = torch.cuda.Stream()
assert torch.cuda.current_stream() == stream  # one stream on the CPU backend: not on a side stream
assert isinstance(stream, torch.cuda.Stream)
with torch.cuda.stream(stream):'''


def _run(python: str, prelude: str, side_stream: str, synchronize: str, folder: Path,
         extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    script = _SCRIPT.format(prelude=prelude, side_stream=side_stream, synchronize=synchronize)
    run_python(python, "-c", textwrap.dedent(script), str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_deepseek3s_router_rope_and_dispatcher_copies_compute_what_pytorch_computes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "inputs.npz", logits=rng.standard_normal((12, 8)).astype(np.float32),
             bias=(0.1 * rng.standard_normal(8)).astype(np.float32),
             weight=rng.standard_normal((12, 8)).astype(np.float32),
             q=rng.standard_normal((12, 2, 3, 12)).astype(np.float32),
             q_weight=rng.standard_normal((12, 2, 3, 12)).astype(np.float32),
             counts=np.array([3, 0, 5, 2, 1, 4], np.int64))
    expected = _run(reference_python(), _REFERENCE_PRELUDE, "if True:", "", tmp_path, [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor", _SIDE_STREAM, "stream.synchronize()", tmp_path,
               ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    for key in ("routing_map", "tokens", "host_counts", "input_splits"):
        assert np.array_equal(got[key], expected[key]), key
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=key)


def test_stream_context_and_events_of_the_one_stream() -> None:
    from mindspeed_ms.compat.msadapter_cpu import HostEvent, HostStream, communication_stream, stream

    with stream(HostStream(priority=-1)), stream(None), stream(communication_stream()):
        pass  # MindSpeed's MindSpore async all-to-all: StreamCtx(mindspore.runtime.communication_stream())
    side = HostStream()
    event = side.record_event()  # MindSpeed's fb-overlap dispatcher: record, then wait on the current stream
    assert isinstance(event, HostEvent)
    side.wait_event(event)
    event.wait()
    assert event.query() is True
    given = HostEvent()
    assert side.record_event(given) is given
    with pytest.raises(TypeError, match=r"torch.cuda.stream\(\) expects a torch.cuda.Stream or None.*got int"):
        stream(3)
