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
# megatron's embedding and loss transposes at the tiny size ([b, s, h] -> [s, b, h], recorded), float32 from 1024
# elements on the host; labels (int64) and smaller float32 views left to MindSpore
before = COUNT[0]
weight = torch.tensor(given["k"][:2, :32, :64]).requires_grad_()
embedded = (weight * 3.0).transpose(0, 1).contiguous()
(embedded * torch.tensor(given["q"][:32, :2, :64])).sum().backward()
out["tiny_transpose"], out["tiny_grad"] = embedded.detach().numpy(), weight.grad.numpy()
out["tiny_flags"] = np.array([embedded.is_contiguous(), embedded.data_ptr() != weight.data_ptr()])
out["at_threshold"] = q0[:32, 0, :32].t().contiguous().numpy()  # 1024 elements
out["below_threshold"] = q0[:31, 0, :33].t().contiguous().numpy()  # 1023
out["labels"] = torch.tensor(given["labels"]).transpose(0, 1).contiguous().numpy()
out["tiny_host_copies"] = np.array(COUNT[0] - before)
{checks}
np.savez(sys.argv[2], **out)
'''

#: ours: the host copies counted (the reference counts none)
_COUNTING = """
from mindspeed_ms.compat import host_arithmetic
COUNT = [0]
_contiguous_copy = host_arithmetic.contiguous_copy


def _counted(*args):
    COUNT[0] += 1
    return _contiguous_copy(*args)


host_arithmetic.contiguous_copy = _counted
"""

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
             k=rng.standard_normal((128, 32, 64)).astype(np.float32), labels=rng.integers(0, 4096, (2, 32)))
    expected = _run(reference_python(), "COUNT = [0]", "", tmp_path, [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor" + _COUNTING, _CHECKS, tmp_path,
               ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    assert expected["flags"].tolist() == [True, True, True]
    assert expected["tiny_flags"].tolist() == got["tiny_flags"].tolist() == [True, True]
    assert got.pop("tiny_host_copies") == 2  # the transpose, 1024 elements
    assert expected.pop("tiny_host_copies") == 0
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
