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
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
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
