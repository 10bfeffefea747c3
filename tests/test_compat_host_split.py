"""mindspeed_ms.compat.host_split: ``torch.split`` of large float32 tensors that record a gradient, its backward on
the host, computes what PyTorch computes: the pieces and the input's gradient (megatron's QKV split, an unused
piece, a piece used twice, uneven int sizes, negative and keyword dims, a strided input), bit for bit against the
reference interpreter; the calls it does not take (no gradient, no_grad, float16, small tensors, one piece) keep
MindSpore's split and its values.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied on
the same inputs; the MindSpore side also records which calls went through the host Function.
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

given = np.load(sys.argv[1])
out = {{}}
x, g = given["x"], given["g"]  # [128, 4, 1536] (megatron's QKV output at the mid size) and a gradient of it

def run(name, values, pieces_of, grads_of=None, grad=True):
    """pieces_of(tensor) -> pieces; grads_of(pieces) -> (pieces used, their gradients)."""
    before = taken()
    t = torch.tensor(values).requires_grad_(grad)
    pieces = pieces_of(t)
    paths[name] = taken() - before
    for i, piece in enumerate(pieces):
        out[f"{{name}}_{{i}}"] = piece.detach().float().numpy()
    if grads_of is not None:
        used, grads = grads_of(pieces)
        torch.autograd.backward(list(used), list(grads))
        out[name + "_dx"] = t.grad.float().numpy()

def like(piece, offset=0):
    n = int(np.prod(piece.shape))
    return torch.tensor(g.reshape(-1)[offset:offset + n].reshape(tuple(piece.shape)))

def all_pieces(pieces):
    return pieces, [like(p, 7 * i) for i, p in enumerate(pieces)]

def megatron(t):
    q, k, v = torch.split(t.view(128, 4, 8, 192), [64, 64, 64], dim=3)
    return q.reshape(128, 4, -1, 64), k, v

run("megatron", x, megatron, all_pieces)
run("unused_piece", x, lambda t: torch.split(t, [512, 512, 512], dim=-1),
    lambda p: ([p[0], p[2]], [like(p[0]), like(p[2], 3)]))
run("used_twice", x, lambda t: t.split(512, dim=2),
    lambda p: ([p[0], p[1], p[0] * 2.0], [like(p[0]), like(p[1], 5), like(p[0], 9)]))
run("uneven_int", x, lambda t: t.split(50, 0), all_pieces)
run("keyword", x, lambda t: torch.split(t, split_size_or_sections=[1000, 536], dim=2), all_pieces)
run("method_keyword", x, lambda t: t.split(split_size=2, dim=1), all_pieces)
run("strided", x, lambda t: torch.split(t.transpose(0, 2), [1024, 512]), all_pieces)
run("empty_piece", x, lambda t: torch.split(t, [0, 1536], dim=2), all_pieces)
run("no_grad_input", x, lambda t: torch.split(t, [512, 1024], dim=2), grad=False)
def under_no_grad(t):
    with torch.no_grad():
        return torch.split(t, [512, 1024], dim=2)
run("no_grad", x, under_no_grad)
run("half", x.astype(np.float16), lambda t: torch.split(t, [512, 1024], dim=2), all_pieces)
run("small", x[:8, :2, :64], lambda t: torch.split(t, [32, 32], dim=2), all_pieces)
run("one_piece", x, lambda t: torch.split(t, 2000, dim=2), all_pieces)
{checks}
np.savez(sys.argv[2], **out)
'''

_REFERENCE_PRELUDE = '''
paths = {}
taken = lambda: 0
'''

_PRELUDE = '''
import mindspeed_ms.adaptor
from mindspeed_ms.compat import host_split
paths = {}
_host = host_split._function()
_apply = _host.apply
_calls = [0]
def _counted(*args):
    _calls[0] += 1
    return _apply(*args)
_host.apply = _counted
taken = lambda: _calls[0]
'''

_CHECKS = '''
import msadapter.ops.array
from mindspore.common.tensor import Tensor
assert torch.split.__code__.co_filename.endswith("compat/host_split.py")
assert Tensor.split.__code__.co_filename.endswith("compat/host_split.py")
expected = {"megatron": 1, "unused_piece": 1, "used_twice": 1, "uneven_int": 1, "keyword": 1,
            "method_keyword": 1, "strided": 1, "empty_piece": 1, "no_grad_input": 0, "no_grad": 0, "half": 0,
            "small": 0, "one_piece": 0}
assert paths == expected, paths
'''


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_split_matches_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "inputs.npz", x=rng.standard_normal((128, 4, 1536)).astype(np.float32),
             g=rng.standard_normal(128 * 4 * 1536 + 64).astype(np.float32))
    expected = _run(reference_python(), _REFERENCE_PRELUDE, "", tmp_path, [])
    got = _run(sys.executable, _PRELUDE, _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    assert {"megatron_dx", "unused_piece_dx", "used_twice_dx", "strided_dx"} <= set(got)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        assert np.array_equal(got[key], value), key  # copies and placed gradients: the same bits
    # the unused piece's gradient is zero, the piece used twice accumulates
    assert not expected["unused_piece_dx"][..., 512:1024].any()
    assert expected["unused_piece_dx"][..., :512].all()


def test_a_piece_without_a_gradient_is_placed_as_zeros() -> None:
    """MindSpore hands zeros for an unused piece; a None gradient (the autograd's other convention) is zeros too."""
    from mindspeed_ms.compat.host_arithmetic import scatter_pieces, split_pieces

    values = np.arange(2 * 3 * 7, dtype=np.float32).reshape(2, 3, 7)
    pieces = [np.empty((2, 3, n), np.float32) for n in (2, 0, 5)]
    split_pieces(values, 2, pieces)
    assert np.array_equal(np.concatenate(pieces, axis=2), values)
    out = np.full((2, 3, 7), np.nan, np.float32)
    scatter_pieces([pieces[0], None, None], (2, 0, 5), 2, out)
    assert np.array_equal(out[..., :2], values[..., :2])
    assert not out[..., 2:].any()
