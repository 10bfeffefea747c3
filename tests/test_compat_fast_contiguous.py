"""mindspeed_ms.compat.fast_contiguous: host copies of strided views (``Tensor.contiguous``, bmm/baddbmm operands)
compute what PyTorch computes: the same values, contiguous, a copy (not an alias), gradients through.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied
(``--ai-framework mindspore``): megatron's attention (baddbmm of transposed query and key, softmax, bmm with the
transposed value, ``permute(...).contiguous()``) with gradients, and copies of other layouts (expanded, sliced,
bfloat16, small, already contiguous).
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
q0, k0 = torch.tensor(given["q"]), torch.tensor(given["k"])
out = {{}}
q, k = q0.clone().requires_grad_(), k0.clone().requires_grad_()
scores = torch.baddbmm(torch.zeros(32, 128, 128), q.transpose(0, 1), k.transpose(0, 1).transpose(1, 2), beta=0.0,
                       alpha=0.125)
context = torch.bmm(torch.softmax(scores, dim=-1), k.transpose(0, 1))
merged = context.permute(1, 0, 2).contiguous()
(merged * merged).sum().backward()
out["scores"], out["context"], out["merged"] = scores.detach().numpy(), context.detach().numpy(), \\
    merged.detach().numpy()
out["grad_q"], out["grad_k"] = q.grad.numpy(), k.grad.numpy()
out["method_bmm"] = q0.transpose(0, 1).bmm(k0.transpose(0, 1).transpose(1, 2)).numpy()
base = q0.reshape(-1)[:128 * 256].reshape(128, 256)
view = base.t()
copy = view.contiguous()
out["flags"] = np.array([copy.is_contiguous(), base.contiguous() is base, copy.data_ptr() != base.data_ptr()])
copy.mul_(2.0)
out["copy"], out["base_after"] = copy.numpy(), base.numpy()
out["expanded"] = q0[0, 0].reshape(64, 1).expand(64, 400).contiguous().numpy()
out["sliced"] = q0[:, ::2, 1:].contiguous().numpy()
out["small"] = q0[:4, :4].transpose(0, 1).contiguous().numpy()
out["bfloat16"] = q0.to(torch.bfloat16).transpose(0, 1).contiguous().float().numpy()
{checks}
np.savez(sys.argv[2], **out)
'''

_CHECKS = '''
from mindspore.common.tensor import Tensor
assert Tensor.contiguous.__code__.co_filename.endswith("compat/fast_contiguous.py")
'''


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_host_copies_match_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "inputs.npz", q=rng.standard_normal((128, 32, 64)).astype(np.float32),
             k=rng.standard_normal((128, 32, 64)).astype(np.float32))
    expected = _run(reference_python(), "", "", tmp_path, [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor", _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    assert expected["flags"].tolist() == [True, True, True]
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        if key in ("scores", "context", "grad_q", "grad_k", "method_bmm"):  # float32 GEMMs of 64-128 products
            assert np.allclose(got[key], value, rtol=1e-5, atol=1e-5), key
        elif key == "merged":
            assert np.array_equal(got[key], got["context"].transpose(1, 0, 2)), key
            assert np.allclose(got[key], value, rtol=1e-5, atol=1e-5), key
        else:  # copies: the same bits
            assert np.array_equal(got[key], value), key
