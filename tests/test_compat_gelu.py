"""mindspeed_ms.compat.gelu: ``F.gelu`` (erf form) computes what PyTorch's CPU gelu computes, forward and gradient.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied
(``--ai-framework mindspore``) over the same dense grid (every float32 step of 1/1024 in [-12, 12], large and tiny
magnitudes, +-0, +-inf, NaN), in float32, float16 and bfloat16, through ``F.gelu``, ``torch.nn.GELU`` and the
tanh form (left to MSAdapter), with gradients of ``(gelu(x) * w).sum()`` (w a fixed random weight).

The bound: PyTorch's CPU kernel approximates erf (Abramowitz and Stegun 7.1.26, absolute error <= 1.5e-7), ours
uses MindSpore's Erf kernel (within 5e-8 of the true erf), so ``gelu = x/2 (1 + erf)`` may differ by up to
``|x|/2 * 2e-7`` plus float32 rounding: measured max 1.0e-6 at |x| ~ 10 (one or two units in the last place of
the result there), 2.4e-7 for |x| <= 4. The same holds for the gradient's ``(1 + erf) / 2`` term, whose
difference is at most 1.2e-7 (measured 6e-8); the ``x exp(-x^2/2) / sqrt(2 pi)`` term is PyTorch's formula.
float16/bfloat16 results are rounded once from float32, as PyTorch's: at most one unit in the last place apart.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
from _helpers import ROOT, reference_python, run_python, subprocess_env

from mindspeed_ms.compat import gelu

_SCRIPT = '''
import sys
import numpy as np
{prelude}
import torch

given = np.load(sys.argv[1])
grid, weight = given["grid"], given["weight"]
out = {{}}
for dtype in ("float32", "float16", "bfloat16"):
    x = torch.tensor(grid).to(getattr(torch, dtype)).requires_grad_()
    y = torch.nn.functional.gelu(x)
    (y.float() * torch.tensor(weight)).sum().backward()
    out[dtype] = y.detach().float().numpy()
    out[dtype + "_grad"] = x.grad.float().numpy()
x = torch.tensor(grid[:4096].reshape(64, 64)).requires_grad_()
y = torch.nn.GELU()(x)
(y * torch.tensor(weight[:4096].reshape(64, 64))).sum().backward()
out["module"], out["module_grad"] = y.detach().numpy(), x.grad.numpy()
x = torch.tensor(grid[:32768].reshape(32, 4, 256)).requires_grad_()  # the tiny model's MLP activation
y = torch.nn.functional.gelu(x[:, :2] * 1.0)  # a contiguous tensor computed from a slice
(y * torch.tensor(weight[:16384].reshape(32, 2, 256))).sum().backward()
out["small"], out["small_grad"] = y.detach().numpy(), x.grad.numpy()
x = torch.tensor(grid[:24577:7]).requires_grad_()  # finite: the tanh form is MSAdapter's, unchanged
y = torch.nn.functional.gelu(x, approximate="tanh")
(y * torch.tensor(weight[:24577:7])).sum().backward()
out["tanh"], out["tanh_grad"] = y.detach().numpy(), x.grad.numpy()
out["float64"] = torch.nn.functional.gelu(torch.tensor(grid[::7].astype(np.float64))).numpy()
out["scalar"] = torch.nn.functional.gelu(torch.tensor(-0.75)).numpy()
out["no_grad"] = torch.nn.functional.gelu(torch.tensor(grid[:100])).numpy()
x = torch.tensor(grid[:512].reshape(8, 64)).requires_grad_()
y = torch.nn.functional.gelu(x.t())  # a strided view
(y * y).sum().backward()
out["view"], out["view_grad"] = y.detach().numpy(), x.grad.numpy()
np.savez(sys.argv[2], **out)
'''


def _run(python: str, prelude: str, folder: Path, extra: list[str], tag: str = "") -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}{tag}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude)), str(folder / "inputs.npz"),
               str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def _grid() -> np.ndarray:
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e-45, -1e-45, 3.4e38, -3.4e38, 30.0, -30.0]
    magnitudes = np.logspace(-20, 38, 600)
    once = np.concatenate([np.arange(-12 * 1024, 12 * 1024 + 1) / 1024.0, magnitudes, -magnitudes, special])
    # three times: above gelu.COPY_ELEMENTS (the host path reads the input's memory in the backward)
    return np.tile(once, 3).astype(np.float32)


def _ulp(expected: np.ndarray, dtype: str) -> np.ndarray:
    """The unit in the last place of ``dtype`` at each value (subnormals: the smallest spacing)."""
    bits, smallest = {"float16": (10, -14), "bfloat16": (7, -126), "float32": (23, -126)}[dtype]
    exponent = np.floor(np.log2(np.maximum(np.abs(expected.astype(np.float64)), 2.0**smallest)))
    return 2.0 ** (exponent - bits)


def test_gelu_matches_pytorch_over_a_dense_grid(tmp_path: Path) -> None:
    grid = _grid()
    weight = np.random.default_rng(0).standard_normal(grid.size).astype(np.float32)
    np.savez(tmp_path / "inputs.npz", grid=grid, weight=weight)
    expected = _run(reference_python(), "", tmp_path, [])
    assert grid.size >= gelu.COPY_ELEMENTS > 16384 >= gelu.HOST_ELEMENTS  # the small case: the host path, copied
    ours = ("import mindspeed_ms.adaptor\nimport torch\n"
            "assert torch.nn.functional.gelu.__code__.co_filename.endswith('compat/gelu.py')\n"
            "from mindspeed_ms.compat import _host_gelu, gelu")
    host = _run(sys.executable, ours, tmp_path, ["--ai-framework", "mindspore"])
    # and MindSpore's kernels (where the C extension is not built): the same bounds
    kernels = _run(sys.executable, ours + "\ngelu.HOST_ELEMENTS = 10 ** 12", tmp_path,
                   ["--ai-framework", "mindspore"], tag="-kernels")
    capability = run_python(reference_python(), "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())")
    for got in (host, kernels):
        _check(got, expected, grid, weight, capability.strip().splitlines()[-1])


def _check(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], grid: np.ndarray,
           weight: np.ndarray, capability: str = "AVX512") -> None:
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        # NaN exactly where PyTorch has NaN (+-inf included); gelu's zeros with PyTorch's sign (gradients: PyTorch
        # flushes some below 1e-30 to zero, within the bound below). These special cases follow PyTorch's AVX-512
        # kernel; with AVX2 (an AMD EPYC, 2 Dec) PyTorch's float32/bfloat16 gelu(+inf) is +inf (gradient 1) and
        # large negative inputs give +0.0: there only the values are compared
        if capability == "AVX512":
            assert np.array_equal(np.isnan(got[key]), np.isnan(value)), key
        zeros = value == 0
        if not key.endswith("grad") and capability == "AVX512":  # AVX2's erf gives large negatives +0.0
            assert np.array_equal(np.signbit(got[key][zeros]), np.signbit(value[zeros])), key
    x = grid.astype(np.float64)
    scale = np.maximum(1.0, np.abs(x))
    scale_grad = scale * np.maximum(1.0, np.abs(weight.astype(np.float64)))
    for key, allowed in (("float32", 3.5e-7 * scale), ("float32_grad", 3.5e-7 * scale_grad)):
        finite = np.isfinite(expected[key])
        difference = np.abs(got[key][finite].astype(np.float64) - expected[key][finite])
        assert np.all(difference <= allowed[finite]), (key, difference.max())
    for dtype in ("float16", "bfloat16"):
        for key, allowed in ((dtype, 3.5e-7 * scale), (dtype + "_grad", 3.5e-7 * scale_grad)):
            finite = np.isfinite(expected[key])
            difference = np.abs(got[key][finite].astype(np.float64) - expected[key][finite])
            assert np.all(difference <= 2 * _ulp(expected[key][finite], dtype) + allowed[finite]), key
    small = grid[:32768].reshape(32, 4, 256)[:, :2].astype(np.float64)
    small_scale = np.maximum(1.0, np.abs(small))
    small_weight = np.maximum(1.0, np.abs(weight[:16384].reshape(32, 2, 256).astype(np.float64)))
    for key, allowed in (("small", 3.5e-7 * small_scale), ("small_grad", None)):
        finite = np.isfinite(expected[key])
        if allowed is None:  # the gradient reaches the slice's rows only (zeros elsewhere)
            got_part, expected_part = got[key][:, :2], expected[key][:, :2]
            assert np.array_equal(got[key][:, 2:], expected[key][:, 2:]), key
            finite, allowed = np.isfinite(expected_part), 3.5e-7 * small_scale * small_weight
        else:
            got_part, expected_part = got[key], expected[key]
        difference = np.abs(got_part[finite].astype(np.float64) - expected_part[finite])
        assert np.all(difference <= allowed[finite]), (key, difference.max())
    for key in ("module", "module_grad", "float64", "scalar", "no_grad", "view", "view_grad"):
        assert np.allclose(got[key], expected[key], rtol=1e-5, atol=1e-6, equal_nan=True), key
    # the tanh form stays MSAdapter's (MindSpore's GeLU kernel): its gradient is up to 2.7e-6 from PyTorch's
    for key in ("tanh", "tanh_grad"):
        assert np.allclose(got[key], expected[key], rtol=1e-5, atol=5e-6), key
