"""mindspeed_ms.compat.fast_masked_fill: ``masked_fill`` with PyTorch's gradient (``grad.masked_fill(mask, 0)``)
computes what PyTorch computes: values and gradients, the causal mask of megatron's attention and other masks.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied
(``--ai-framework mindspore``) on the same inputs; results must be the same bits
(float32 through NumPy, float16 through MindSpore's MaskedFill).
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
x0, w = torch.tensor(given["x"]), torch.tensor(given["w"])
out = {{}}
for name, mask in (("causal", torch.ones(1, 1, 128, 128).triu(1) > 0), ("full", torch.tensor(given["mask"])),
                   ("row", torch.tensor(given["mask"])[0, 0, :, :1])):
    x = x0.clone().requires_grad_()
    y = x.masked_fill(mask, -10000.0)
    (y * w).sum().backward()
    out[name], out[name + "_grad"] = y.detach().numpy(), x.grad.numpy()
x = x0.clone().requires_grad_()
y = torch.masked_fill(x * 2.0, torch.tensor(given["mask"]), 3)
(y * y).sum().backward()
out["function"], out["function_grad"] = y.detach().numpy(), x.grad.numpy()
x = x0.clone().requires_grad_()
grad = torch.tensor(given["w"])
grad[0, 0, 0, 5] = float("nan")  # a NaN gradient at a masked position: PyTorch fills, so 0
x.masked_fill(torch.ones(1, 1, 128, 128).triu(1) > 0, 0.0).backward(grad)
out["nan_grad"] = x.grad.numpy()
x = x0.clone().requires_grad_()
y = x.masked_fill(torch.ones(1, 1, 128, 128).triu(1) > 0, float("-inf"))
(y * torch.tensor(given["w"])).sum().backward()
out["minus_inf"], out["minus_inf_grad"] = y.detach().numpy(), x.grad.numpy()
out["small"] = x0[0, 0, :4, :4].masked_fill(torch.eye(4) > 0, 1.5).numpy()
out["half"] = x0.half().masked_fill(torch.ones(128, 128).triu(1) > 0, -100.0).float().numpy()
{checks}
np.savez(sys.argv[2], **out)
'''

_CHECKS = '''
from mindspore.common.tensor import Tensor
assert Tensor.masked_fill.__code__.co_filename.endswith("compat/fast_masked_fill.py")
from mindspeed_ms.compat import fast_masked_fill
assert fast_masked_fill._host_function.cache_info().currsize == 1  # float32 went through NumPy
assert fast_masked_fill._function.cache_info().currsize == 1  # float16 through MaskedFill kernels
'''


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_masked_fill_matches_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "inputs.npz", x=rng.standard_normal((4, 8, 128, 128)).astype(np.float32),
             w=rng.standard_normal((4, 8, 128, 128)).astype(np.float32),
             mask=rng.random((4, 8, 128, 128)) < 0.3)
    expected = _run(reference_python(), "", "", tmp_path, [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor", _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    assert not np.isnan(expected["nan_grad"]).any()
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        assert np.array_equal(got[key], value), key
