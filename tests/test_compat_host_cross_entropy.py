"""mindspeed_ms.compat.host_cross_entropy: the vocab-parallel cross entropy's input gradient of float32 logits
on the host computes what PyTorch computes: megatron's ``prepare_gradient_calculation_operands`` and
``calculate_gradients`` (targets inside and outside the partition, a strided ``grad_output``), bit for bit against
the reference interpreter running megatron's own code, the tiny model's logits and one token too; the calls it does
not take (a float16 ``grad_output``) keep the out-of-place replacement and its values.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied on
the same inputs; the MindSpore side also records which calls went through NumPy.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
from _helpers import ROOT, reference_python, run_python, subprocess_env

_SCRIPT = '''
import sys
import numpy as np
{prelude}
import torch
from megatron.core.tensor_parallel.cross_entropy import VocabParallelCrossEntropy as CrossEntropy

given = np.load(sys.argv[1])
out = {{}}

def run(name, softmax, target, partition, grad_output):
    """target: global vocabulary ids; partition: (start, end) of this rank's part of the vocabulary."""
    before = taken()
    softmax = torch.tensor(softmax)
    target = torch.tensor(target)
    target_mask = (target < partition[0]) | (target >= partition[1])
    masked_target = target.clone() - partition[0]
    masked_target = masked_target.masked_fill(target_mask, 0)
    grad_2d, arange_1d, softmax_update, grad_input = CrossEntropy.prepare_gradient_calculation_operands(
        softmax, target_mask)
    result = CrossEntropy.calculate_gradients(grad_2d, arange_1d, masked_target.view(-1), softmax_update,
                                              grad_input, grad_output)
    paths[name] = taken() - before
    out[name] = result.float().numpy()

logits = given["logits"]  # [128, 4, 128]: the mid size's (sequence, micro batch, vocabulary)
e = np.exp(logits - logits.max(axis=-1, keepdims=True))
softmax = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
target, g = given["target"], given["g"]
run("whole_vocabulary", softmax, target, (0, 128), torch.tensor(g))
run("partition", softmax, target, (64, 128), torch.tensor(g))  # tp=2's second rank: half the targets elsewhere
run("strided_grad_output", softmax, target, (0, 128), torch.tensor(np.ascontiguousarray(g.T)).t())
run("small", softmax[:32], target[:32], (0, 128), torch.tensor(g[:32]))  # the tiny model's [128, 128]
run("one_token", softmax[:1, :1], target[:1, :1], (0, 128), torch.tensor(g[:1, :1]))
run("half_grad_output", softmax, target, (0, 128), torch.tensor(g).half())
{checks}
np.savez(sys.argv[2], **out)
'''

_REFERENCE_PRELUDE = '''
paths = {}
taken = lambda: 0
'''

_PRELUDE = '''
import mindspeed_ms.adaptor
from mindspeed_ms.compat import host_cross_entropy
paths = {}
_calls = [0]
_gradient = host_cross_entropy.cross_entropy_gradient
def _counted(*args):
    _calls[0] += 1
    return _gradient(*args)
host_cross_entropy.cross_entropy_gradient = _counted
taken = lambda: _calls[0]
'''

_CHECKS = '''
assert paths == {"whole_vocabulary": 1, "partition": 1, "strided_grad_output": 1, "small": 1,
                 "one_token": 1, "half_grad_output": 0}, paths
'''


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    return _run_script(_SCRIPT, python, prelude, checks, folder, extra)


def _run_script(script: str, python: str, prelude: str, checks: str, folder: Path,
                extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(script.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_cross_entropy_gradient_matches_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "inputs.npz", logits=(rng.standard_normal((128, 4, 128)) * 3).astype(np.float32),
             target=rng.integers(0, 128, (128, 4)), g=(rng.random((128, 4)) / 512).astype(np.float32))
    expected = _run(reference_python(), _REFERENCE_PRELUDE, "", tmp_path, [])
    got = _run(sys.executable, _PRELUDE, _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        assert np.array_equal(got[key], value), key  # the same float32 subtraction and multiplication
    # the target term is there: negative at the targets inside the partition, positive everywhere else
    assert (expected["whole_vocabulary"] < 0).sum() == 128 * 4


_FORWARD_SCRIPT = '''
import sys
import numpy as np
{prelude}
import torch
from megatron.core.tensor_parallel.cross_entropy import VocabParallelCrossEntropy as CrossEntropy

given = np.load(sys.argv[1])
out = {{}}

def forward(name, logits, target, partition, dtype=torch.float32, view=False):
    """megatron's three forward steps as _VocabParallelCrossEntropy.forward calls them (one rank: no all-reduce)."""
    before = taken()
    tensor = torch.tensor(logits).to(dtype)
    if view:  # a tensor that does not own its memory: the kernels' path
        tensor = torch.cat([tensor, tensor], dim=-1)[..., :logits.shape[-1]]
    version = tensor._version
    tensor, logits_max = CrossEntropy.calculate_logits_max(tensor)
    mask, masked_1d, predicted, sums, exp_logits = CrossEntropy.calculate_predicted_logits(
        tensor, torch.tensor(target), logits_max, *partition)
    out[f"{{name}}.exp"] = exp_logits.float().numpy().copy()  # before the division in place
    softmax, loss = CrossEntropy.calculate_cross_entropy_loss(exp_logits, predicted, sums)
    paths[name] = taken() - before
    for key, value in (("max", logits_max), ("mask", mask), ("masked_1d", masked_1d), ("predicted", predicted),
                       ("sums", sums), ("softmax", softmax), ("loss", loss), ("logits_after", tensor)):
        out[f"{{name}}.{{key}}"] = value.float().numpy()
    out[f"{{name}}.in_place"] = np.array([exp_logits is tensor, softmax is tensor, tensor._version > version])

logits, target = given["logits"], given["target"]
forward("vocab_4096", logits, target, (0, 4096))  # the field's [32, 2, 4096]
forward("partition", logits[..., 2048:].copy(), target, (2048, 4096))  # tp=2's second rank
forward("tokens_1d", logits.reshape(-1, 4096)[:5].copy(), target.reshape(-1)[:5].copy(), (0, 4096))
forward("extremes", given["extremes"], target[:2], (0, 4096))
forward("half", logits, target, (0, 4096), dtype=torch.float16)  # .float() is a new float32 tensor: the host
forward("view", logits, target, (0, 4096), view=True)  # MindSpore's kernels
{checks}
np.savez(sys.argv[2], **out)
'''

_FORWARD_PRELUDE = '''
import mindspeed_ms.adaptor
from mindspeed_ms.compat import host_cross_entropy
paths = {}
_calls = [0]
def _counting(name):
    function = getattr(host_cross_entropy, name)
    def counted(*args):
        _calls[0] += 1
        return function(*args)
    setattr(host_cross_entropy, name, counted)
for _name in ("row_maxima", "cross_entropy_forward", "cross_entropy_loss"):
    _counting(_name)
taken = lambda: _calls[0]
'''

_FORWARD_CHECKS = '''
assert paths == {"vocab_4096": 3, "partition": 3, "tokens_1d": 3, "extremes": 3, "half": 2, "view": 0}, paths
'''


def test_cross_entropy_forward_matches_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    extremes = (rng.standard_normal((2, 2, 4096)) * 3).astype(np.float32)
    extremes[0, 0, :] = 1e30  # every exponential 1
    extremes[0, 1, 7] = 80.0  # one logit far above the rest: the others' exponentials underflow to 0
    extremes[1, 0, ::2] = -1e30
    np.savez(tmp_path / "inputs.npz", logits=(rng.standard_normal((32, 2, 4096)) * 4).astype(np.float32),
             target=rng.integers(0, 4096, (32, 2)), extremes=extremes)
    folder = tmp_path
    expected = _run_script(_FORWARD_SCRIPT, reference_python(), _REFERENCE_PRELUDE, "", folder, [])
    got = _run_script(_FORWARD_SCRIPT, sys.executable, _FORWARD_PRELUDE, _FORWARD_CHECKS, folder,
                      ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        name, _, part = key.partition(".")
        if part in ("max", "mask", "masked_1d", "predicted", "in_place"):  # no rounding: PyTorch's bits
            assert np.array_equal(got[key], value), key
        elif name == "view":  # MindSpore's kernels: its exp is not PyTorch's
            np.testing.assert_allclose(got[key], value, rtol=2e-5, atol=1e-30, err_msg=key)
        elif part == "exp":  # NumPy's float32 exp: within 2 ulps of PyTorch's
            ulps = np.abs(got[key].view(np.int32).astype(np.int64) - value.view(np.int32))
            assert ulps.max() <= 2, (key, ulps.max())
        else:  # a row sum of 4096 exponentials in another order, then a log and a division
            np.testing.assert_allclose(got[key], value, rtol=2e-6, atol=1e-30, err_msg=key)
    assert got["vocab_4096.in_place"].all()  # the logits tensor holds the softmax, its writes counted
    outside = expected["partition.mask"].astype(bool)
    assert 0 < outside.sum() < outside.size
    assert (expected["partition.predicted"][outside] == 0).all()


def test_the_forward_wrappers_take_over_megatrons_steps_only() -> None:
    """A field replacement of a forward step (MindSpeed-LLM's MindSpore ``calculate_predicted_logits`` returns a float
    mask its own backward expects) keeps its code; megatron's own steps and our replacement are wrapped."""
    from mindspeed_ms.compat import host_cross_entropy

    def field_step(*args: object) -> object:
        return args

    def megatron_step(*args: object) -> object:
        return args

    megatron_step.__module__ = "megatron.core.tensor_parallel.cross_entropy"
    ours = host_cross_entropy.predicted_logits_wrapper.__module__.replace("host_cross_entropy", "megatron_core")
    for wrapper in (host_cross_entropy.logits_max_wrapper, host_cross_entropy.predicted_logits_wrapper,
                    host_cross_entropy.cross_entropy_loss_wrapper):
        assert wrapper(field_step) is field_step
        wrapped = wrapper(megatron_step)
        assert wrapped is not megatron_step
        assert wrapped.__wrapped__ is megatron_step
        assert wrapper(wrapped) is wrapped  # already wrapped: once
    assert ours in host_cross_entropy.FORWARD_OWNERS
