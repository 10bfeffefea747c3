"""mindspeed_ms.compat.host_softmax: the softmax over the last dimension of large float32 tensors in NumPy
computes what PyTorch computes: values and gradients of megatron's masked attention scores and on edge inputs
(-inf masks, a fully masked row, large and tiny magnitudes, strided views), compared with the reference
interpreter; the calls it does not take (another dimension, a dtype, float16, small tensors) still work.

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
F = torch.nn.functional
causal = torch.ones(1, 1, 128, 128).triu(1) > 0

def run(name, x, function, grad=True):
    x = torch.tensor(x).requires_grad_()
    y = function(x)
    out[name] = y.detach().float().numpy()
    if grad:
        y.backward(torch.tensor(given["g"]).to(y.dtype))
        out[name + "_dx"] = x.grad.float().numpy()

x = given["x"]
run("megatron", x, lambda x: torch.nn.Softmax(dim=-1)(x.masked_fill(causal, -10000.0)))
run("functional", x, lambda x: F.softmax(x, dim=-1))
run("function", x * 0.1, lambda x: torch.softmax(x, -1))
run("method", x, lambda x: x.softmax(3))
run("dim_keyword", x, lambda x: torch.softmax(x, dim=3))
inf_masked = lambda x: F.softmax(x.masked_fill(causal, float("-inf")), dim=-1)
run("minus_inf_mask", x, inf_masked)
run("large", x * 1e4, lambda x: F.softmax(x, -1))
run("tiny", x * 1e-30, lambda x: F.softmax(x, -1))
run("strided", np.ascontiguousarray(x.transpose(0, 1, 3, 2)), lambda x: F.softmax(x.transpose(2, 3), -1))
full = x.copy()
full[0, 0, 5, :] = -np.inf   # a fully masked row: NaN in PyTorch
full[0, 0, 6, 9] = np.inf    # +inf: NaN row
full[0, 0, 7, 3] = np.nan
run("edge", full, lambda x: F.softmax(x, -1), grad=False)
run("other_dim", x, lambda x: F.softmax(x, dim=2))
run("dtype", x, lambda x: F.softmax(x, dim=-1, dtype=torch.float64), grad=False)
run("half", x.astype(np.float16), lambda x: F.softmax(x, -1), grad=False)
run("small", x[0, 0], lambda x: F.softmax(x, -1), grad=False)
{checks}
np.savez(sys.argv[2], **out)
'''

_CHECKS = '''
import msadapter.nn.functional as F
assert F.softmax.__code__.co_filename.endswith("compat/host_softmax.py")
'''


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def _exact(x: np.ndarray) -> np.ndarray:
    """megatron's masked softmax in float64."""
    scores = np.where(np.triu(np.ones((128, 128), bool), 1), -10000.0, x.astype(np.float64))
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_softmax_matches_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    inputs = {"x": (rng.standard_normal((4, 8, 128, 128)) * 4).astype(np.float32),
              "g": rng.standard_normal((4, 8, 128, 128)).astype(np.float32)}
    np.savez(tmp_path / "inputs.npz", **inputs)
    expected = _run(reference_python(), "", "", tmp_path, [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor", _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        tolerance = 2e-3 if key == "half" else 1e-6
        np.testing.assert_allclose(got[key], value, rtol=tolerance, atol=tolerance, equal_nan=True, err_msg=key)
    edge = got["edge"][0, 0]
    assert np.isnan(edge[5:8]).all()
    assert np.isfinite(edge[8:]).all()
    assert np.array_equal(got["minus_inf_mask"] == 0, expected["minus_inf_mask"] == 0)
    # at least as close to the exact softmax as PyTorch's (its exp is a vectorised approximation)
    exact = _exact(inputs["x"])
    assert np.abs(got["megatron"] - exact).max() <= np.abs(expected["megatron"] - exact).max() + 6e-8


def test_the_gradient_written_into_the_result_memory_has_the_same_bits() -> None:
    """``softmax_backward(..., out)`` (the tensor's own memory, no copy afterwards) runs the same operations."""
    from mindspeed_ms.compat.host_arithmetic import softmax_backward, softmax_forward

    rng = np.random.default_rng(1)
    y = softmax_forward((rng.standard_normal((4096, 128)) * 4).astype(np.float32))
    g = rng.standard_normal((4096, 128)).astype(np.float32)
    out = np.full_like(g, np.nan)
    assert softmax_backward(g, y, out) is out
    assert np.array_equal(out, softmax_backward(g, y))
