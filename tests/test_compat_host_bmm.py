"""mindspeed_ms.compat.host_bmm: ``bmm`` and ``baddbmm(beta=0)`` of large float32 batches in NumPy compute what
PyTorch computes: megatron's attention products of strided views (values and the gradients of both operands),
``alpha`` applied, NaN in the ignored ``input``, compared with the reference interpreter; the calls it does not
take (``beta`` other than 0, an ``input`` requiring a gradient, small batches, float16) still work.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied on
the same inputs.
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

def run(name, function, *arrays, grad=True):
    leaves = [torch.tensor(a).requires_grad_(grad) for a in arrays]
    y = function(*leaves)
    out[name] = y.detach().float().numpy()
    if grad:
        y.backward(torch.tensor(given["g"][:y.shape[0], :y.shape[1], :y.shape[2]]).to(y.dtype))
        for i, leaf in enumerate(leaves):
            out[f"{{name}}_d{{i}}"] = leaf.grad.float().numpy()

mixed = given["mixed"]  # megatron's QKV output [sq, b, np, 3 * hn]
buffer = torch.full((32, 128, 128), float("nan"))  # beta=0 ignores it, NaN included

def scores(m):
    q, k, _ = torch.split(m, [64, 64, 64], dim=3)
    return torch.baddbmm(buffer, q.reshape(128, 32, 64).transpose(0, 1),
                         k.reshape(128, 32, 64).transpose(0, 1).transpose(1, 2), beta=0.0, alpha=0.125)

def context(p, m):
    _, _, v = torch.split(m, [64, 64, 64], dim=3)
    return torch.bmm(p, v.reshape(128, 32, 64).transpose(0, 1))

run("scores", scores, mixed)
run("context", context, given["probs"], mixed)
run("method", lambda a, b: a.bmm(b), given["probs"], given["probs"].transpose(0, 2, 1).copy())
run("alpha_odd", lambda a, b: buffer.baddbmm(a, b, beta=0, alpha=0.3), given["probs"], given["probs"])
run("beta_one", lambda a, b: torch.baddbmm(torch.ones(32, 128, 128), a, b, beta=1.0, alpha=0.5),
    given["probs"], given["probs"])
run("input_grad", lambda a, b: torch.baddbmm(torch.ones(32, 128, 128, requires_grad=True), a, b, beta=0.0),
    given["probs"], given["probs"])
run("small", lambda a, b: torch.bmm(a, b), given["probs"][:2, :8], given["probs"][:2, :, :8])
run("half", lambda a, b: torch.bmm(a, b), given["probs"].astype(np.float16), given["probs"].astype(np.float16),
    grad=False)
{checks}
np.savez(sys.argv[2], **out)
'''

_CHECKS = '''
import torch
assert torch.bmm.__code__.co_filename.endswith("compat/host_bmm.py")
assert torch.baddbmm.__code__.co_filename.endswith("compat/host_bmm.py")
'''


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_bmm_and_baddbmm_match_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    probs = rng.random((32, 128, 128)).astype(np.float32)
    np.savez(tmp_path / "inputs.npz", mixed=rng.standard_normal((128, 4, 8, 192)).astype(np.float32),
             probs=probs / probs.sum(axis=-1, keepdims=True), g=rng.standard_normal((32, 128, 128)).astype(np.float32))
    expected = _run(reference_python(), "", "", tmp_path, [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor", _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        assert np.isfinite(value).all(), key
        # float32 GEMMs summing in another order: within a few units of float32 rounding of the magnitudes summed
        scale = 2e-3 if key.startswith("half") else 2e-6 * max(1.0, float(np.abs(value).max()))
        np.testing.assert_allclose(got[key], value, rtol=0, atol=scale, err_msg=key)
