"""mindspeed_ms.compat.bias_add: ``activation + bias`` through BiasAdd computes what PyTorch computes (values,
gradients of both operands), and other adds keep their behaviour.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied
(``--ai-framework mindspore``) on the same inputs; the sums must be bit-identical (the same float additions), the
gradients equal to float32 summation order.
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
x3, bias, weight = (torch.tensor(given[name]) for name in ("x3", "bias", "weight"))
out = {{}}
# megatron's forms: output + bias (a leaf Parameter), intermediate + bias, with gradients of both
a = x3.clone().requires_grad_()
b = torch.nn.Parameter(bias.clone())
y = a + b
(y * weight).sum().backward()
out["operator"], out["operator_grad_input"], out["operator_grad_bias"] = y.detach().numpy(), a.grad.numpy(), \\
    b.grad.numpy().copy()  # PyTorch accumulates the next backward into this memory
h = (x3 * 2.0).requires_grad_()
y = torch.add(h, b)
(y * weight).sum().backward()
out["function"], out["function_grad_input"], out["function_grad_bias"] = y.detach().numpy(), h.grad.numpy(), \\
    b.grad.numpy()
out["method"] = x3.add(bias).numpy()
# megatron's linear layers: the bias gradient is grad_output.sum(dim=0) of the 2-D gradient
g2 = (x3 * weight).reshape(-1, 1024)
out["column_sum"], out["column_sum_positional"] = g2.sum(dim=0).numpy(), g2.sum(0).numpy()
out["row_sum"], out["column_sum_keepdim"] = g2.sum(dim=1).numpy(), g2.sum(dim=0, keepdim=True).numpy()
leaf = g2.clone().requires_grad_()
column = leaf.sum(dim=0)
(column * bias).sum().backward()
out["column_sum_leaf"], out["column_sum_leaf_grad"] = column.detach().numpy(), leaf.grad.numpy()
a = x3.half().requires_grad_()
y = a + bias.half().requires_grad_()
(y.float() * weight).sum().backward()
out["half_grad_input"] = a.grad.float().numpy()
out["alpha"] = x3.add(bias, alpha=2.0).numpy()
# below MIN_ELEMENTS (the tiny model's [32, 4, 64]): BiasAdd over the tensor as it is, 2 to 5 dimensions; a leaf
# activation and a leaf bias (no Clone needed), an activation computed from a leaf; 6 dimensions: the broadcast add
small, small_bias, small_weight = (torch.tensor(given[name]) for name in ("small", "small_bias", "small_weight"))
for rank, shape in ((2, (128, 64)), (3, (32, 4, 64)), (4, (8, 4, 4, 64)), (5, (2, 4, 4, 4, 64)),
                    (6, (2, 2, 2, 4, 4, 64))):
    a = small.reshape(shape).clone().requires_grad_()
    b = torch.nn.Parameter(small_bias.clone())
    y = a + b
    (y * small_weight.reshape(shape)).sum().backward()
    out[f"small{{rank}}"], out[f"small{{rank}}_grad_input"] = y.detach().numpy(), a.grad.numpy()
    out[f"small{{rank}}_grad_bias"] = b.grad.numpy()
leaf = small.clone().requires_grad_()
y = torch.add(leaf * 3.0, small_bias)
(y * small_weight).sum().backward()
out["small_computed"], out["small_computed_grad_input"] = y.detach().numpy(), leaf.grad.numpy()
out["small_half"] = (small.half() + small_bias.half()).float().numpy()
out["small_method"] = small.add(small_bias).numpy()
out["small_transposed"] = (small.transpose(0, 1) + small_bias).numpy()
out["small_double"] = (small.double() + small_bias.double()).numpy()
out["small_empty"] = (small[:0] + small_bias).numpy()
out["half"] = (x3.half() + bias.half()).float().numpy()
out["small"] = (x3[:2, :2] + bias).numpy()
out["transposed"] = (x3.transpose(0, 1) + bias).numpy()
out["two_d"] = (x3.reshape(-1, 1024) + bias).numpy()
out["same_shape"] = (x3 + x3).numpy()
out["scalar"] = (x3 + 1.5).numpy()
out["int"] = (torch.arange(6 * 70000).reshape(-1, 6) + torch.arange(6)).numpy()
try:
    x3 + bias[:7]
    out["mismatch"] = np.array(0)
except Exception as error:
    out["mismatch"] = np.array([k.__name__ for k in type(error).__mro__ if k.__module__ == "builtins"][0])
{checks}
np.savez(sys.argv[2], **out)
'''

_CHECKS = '''
from mindspore.common.tensor import Tensor
def files(function):  # the wraps' files, outermost first (host_add's add wraps over bias_add's)
    while function is not None:
        code = getattr(function, "__code__", None)
        yield "" if code is None else code.co_filename
        function = getattr(function, "__wrapped__", None)
for name in ("__add__", "add", "sum"):
    assert any(file.endswith("compat/bias_add.py") for file in files(getattr(Tensor, name))), name
from mindspeed_ms.compat import bias_add
assert bias_add._bias_add_last.cache_info().currsize == 1  # the small adds took the BiasAdd kernel
'''


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_bias_add_matches_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "inputs.npz", x3=rng.standard_normal((64, 4, 1024)).astype(np.float32),
             bias=rng.standard_normal(1024).astype(np.float32),
             weight=rng.standard_normal((64, 4, 1024)).astype(np.float32),
             small=rng.standard_normal((32, 4, 64)).astype(np.float32),
             small_bias=rng.standard_normal(64).astype(np.float32),
             small_weight=rng.standard_normal((32, 4, 64)).astype(np.float32))
    expected = _run(reference_python(), "", "", tmp_path, [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor", _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    assert str(expected["mismatch"]) == "RuntimeError"
    assert str(got["mismatch"]) in ("RuntimeError", "ValueError")  # MSAdapter's own refusal, unchanged here
    for key, value in expected.items():
        if key == "mismatch":
            continue
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        if key.endswith("grad_bias") or "sum" in key:  # sums of 128-256 products: float32 summation order
            assert np.allclose(got[key], value, rtol=1e-5, atol=1e-4), key
        else:
            assert np.array_equal(got[key], value), key
