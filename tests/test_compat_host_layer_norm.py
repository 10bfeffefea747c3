"""mindspeed_ms.compat.host_layer_norm: ``F.layer_norm`` of float32 tensors in NumPy computes what PyTorch computes:
values and the input, weight and bias gradients at megatron's shapes, small ones and on edge inputs, compared with the
reference interpreter; the calls it does not take (float16) still work through MSAdapter.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied on
the same inputs.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _helpers import ROOT, reference_python, run_python, subprocess_env

from mindspeed_ms.compat import host_layer_norm

_SCRIPT = '''
import sys
import numpy as np
{prelude}
import torch

given = np.load(sys.argv[1])
out = {{}}

def run(name, x, shape, affine=True, grad=None, eps=1e-5, module=False):
    x = torch.tensor(x).requires_grad_()
    n = int(np.prod(shape))
    w = torch.tensor(given["w"][:n].reshape(shape)).requires_grad_() if affine else None
    b = torch.tensor(given["b"][:n].reshape(shape)).requires_grad_() if affine else None
    if module:
        layer = torch.nn.LayerNorm(shape[-1], eps=eps)
        with torch.no_grad():
            layer.weight.copy_(w)
            layer.bias.copy_(b)
        w, b = layer.weight, layer.bias
        y = layer(x)
    else:
        y = torch.nn.functional.layer_norm(x, shape, w, b, eps)
    out[name] = y.detach().float().numpy()
    if grad is not None:
        y.backward(torch.tensor(grad).to(y.dtype))
        out[name + "_dx"] = x.grad.float().numpy()
        if affine:
            out[name + "_dw"], out[name + "_db"] = w.grad.numpy(), b.grad.numpy()

x, g = given["x"], given["g"]
run("megatron", x, (512,), grad=g, module=True)
run("plain", x * 100 - 3, (512,), grad=g * 1e-3)
run("no_affine", x, (512,), affine=False, grad=g)
run("two_dims", x.reshape(128, 4, 8, 64), (8, 64), grad=g.reshape(128, 4, 8, 64))
run("strided", np.ascontiguousarray(x.transpose(1, 0, 2)).transpose(1, 0, 2), (512,), grad=g)
run("tiny_values", x * 1e-20, (512,), grad=g)
run("huge_values", x * 1e15, (512,), grad=g)
run("eps", x * 1e-3, (512,), grad=g, eps=1e-2)
edge = x.copy()
edge[0, 0, :] = 3.0        # constant row: variance 0
edge[0, 1, 5] = np.inf     # a row with inf: NaN
edge[0, 2, 7] = np.nan     # a row with NaN
run("edge", edge, (512,))
run("small", x[:8], (512,), grad=g[:8])
run("half", x.astype(np.float16), (512,), affine=False)
xt = torch.tensor(x).requires_grad_()
with torch.no_grad():
    out["no_grad"] = torch.nn.functional.layer_norm(xt, (512,)).numpy()
{checks}
np.savez(sys.argv[2], **out)
'''

_CHECKS = '''
import msadapter.nn.functional as F
from mindspeed_ms.compat import host_layer_norm
if host_layer_norm.has_compiled_wrapper():  # our wrapper's tests in C (_host_wrappers.LayerNorm)
    assert type(F.layer_norm).__module__ == "mindspeed_ms.compat._host_wrappers", type(F.layer_norm)
else:
    assert F.layer_norm.__code__.co_filename.endswith("compat/host_layer_norm.py")
assert F.layer_norm.__wrapped__.__module__.startswith("msadapter")
'''

#: (rtol, atol) against PyTorch by result; the gradients of the weight and bias are sums over 512 rows
_TOLERANCE = {"": (2e-6, 2e-6), "_dx": (2e-6, 2e-6), "_dw": (2e-6, 1e-4), "_db": (2e-6, 1e-4)}


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def _exact(x: np.ndarray, w: np.ndarray, b: np.ndarray, g: np.ndarray) -> dict[str, np.ndarray]:
    """The megatron case in float64: what both sides' rounded results are measured against."""
    rows, grads = x.reshape(-1, 512).astype(np.float64), g.reshape(-1, 512).astype(np.float64)
    mean = rows.mean(axis=1, keepdims=True)
    normalized = (rows - mean) / np.sqrt(((rows - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    return {"megatron": (normalized * w + b).reshape(x.shape), "megatron_dw": (grads * normalized).sum(axis=0),
            "megatron_db": grads.sum(axis=0)}


@pytest.mark.parametrize("path", ["C", "NumPy"])
def test_layer_norm_matches_pytorch(tmp_path: Path, path: str) -> None:
    """Both paths of the arithmetic: the optional C row loops, and NumPy's (``host_arithmetic._ROWS`` None, what runs
    without the extension)."""
    rng = np.random.default_rng(0)
    inputs = {"x": (rng.standard_normal((128, 4, 512)) * 3 + 1).astype(np.float32),
              "g": rng.standard_normal((128, 4, 512)).astype(np.float32),
              "w": rng.standard_normal(512).astype(np.float32), "b": rng.standard_normal(512).astype(np.float32)}
    np.savez(tmp_path / "inputs.npz", **inputs)
    expected = _run(reference_python(), "", "", tmp_path, [])
    prelude = "import mindspeed_ms.adaptor"
    if path == "NumPy":
        prelude += "\nfrom mindspeed_ms.compat import host_arithmetic\nhost_arithmetic._ROWS = None"
    got = _run(sys.executable, prelude, _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        if key == "half":  # MSAdapter's float16 kernel, not ours
            np.testing.assert_allclose(got[key], value, rtol=2e-3, atol=2e-3, err_msg=key)
            continue
        rtol, atol = _TOLERANCE["_" + key.rpartition("_")[2] if key.endswith(("_dx", "_dw", "_db")) else ""]
        scale = max(1.0, float(np.nanmax(np.abs(value[np.isfinite(value)]), initial=0.0)))
        np.testing.assert_allclose(got[key], value, rtol=rtol, atol=atol * scale, equal_nan=True, err_msg=key)
    edge = got["edge"].reshape(-1, 512)
    assert np.isnan(edge[1:3]).all()
    assert np.isfinite(edge[0]).all()
    # the weight and bias gradients: at least as close to the exact sums as PyTorch's float32 accumulation
    for key, exact in _exact(inputs["x"], inputs["w"], inputs["b"], inputs["g"]).items():
        assert np.abs(got[key] - exact).max() <= np.abs(expected[key] - exact).max() * 1.5 + 2e-6, key


def test_writing_into_the_result_memory_gives_the_same_bits() -> None:
    """``out=`` (the tensor's own memory, no copy afterwards) runs the same operations as a new array."""
    from mindspeed_ms.compat.host_arithmetic import layer_norm_backward, layer_norm_forward

    rng = np.random.default_rng(1)
    x = (rng.standard_normal((512, 512)) * 3 + 1).astype(np.float32)
    g = rng.standard_normal((512, 512)).astype(np.float32)
    w, b = rng.standard_normal(512).astype(np.float32), rng.standard_normal(512).astype(np.float32)
    for weight, bias in ((w, b), (w, None), (None, b), (None, None)):
        y, mean, rstd = layer_norm_forward(x, weight, bias, 1e-5)
        out = np.full_like(x, np.nan)
        y_out, mean_out, rstd_out = layer_norm_forward(x, weight, bias, 1e-5, out)
        assert y_out is out
        for new, written in ((y, out), (mean, mean_out), (rstd, rstd_out)):
            assert np.array_equal(new, written)
        dx, dw, db = layer_norm_backward(g, x, mean, rstd, weight, weight is not None, bias is not None)
        into = np.full_like(x, np.nan)
        dx_out, dw_out, db_out = layer_norm_backward(g, x, mean, rstd, weight, weight is not None,
                                                     bias is not None, into)
        assert dx_out is into
        assert np.array_equal(dx, into)
        for new, written in ((dw, dw_out), (db, db_out)):
            assert (new is None and written is None) or np.array_equal(new, written)
        weight_into, bias_into = np.full(512, np.nan, np.float32), np.full(512, np.nan, np.float32)
        _, dw_into, db_into = layer_norm_backward(g, x, mean, rstd, weight, weight is not None, bias is not None,
                                                  into, weight_into, bias_into)
        for new, written, given in ((dw, dw_into, weight_into), (db, db_into, bias_into)):
            assert (new is None and written is None) or (written is given and np.array_equal(new, given))


def test_the_c_bodies_give_the_python_bodies_bits(tmp_path: Path) -> None:
    """``_host_bodies.LayerNorm``'s forward and backward (where built) make the Python bodies' calls: every case of
    the script (a module, no affine parameters, two normalized dimensions, a strided input: the copied rows,
    non-finite rows) gives the same bits either way."""
    rng = np.random.default_rng(1)
    inputs = {"x": (rng.standard_normal((128, 4, 512)) * 3 + 1).astype(np.float32),
              "g": rng.standard_normal((128, 4, 512)).astype(np.float32),
              "w": rng.standard_normal(512).astype(np.float32), "b": rng.standard_normal(512).astype(np.float32)}
    np.savez(tmp_path / "inputs.npz", **inputs)
    prelude = "import mindspeed_ms.adaptor\nfrom mindspeed_ms.compat import host_layer_norm\n"
    compiled = _run(sys.executable, prelude + "assert host_layer_norm.has_compiled_bodies() is "
                    f"{host_layer_norm.has_compiled_bodies()}", _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    python = _run(sys.executable, prelude + "host_layer_norm._compiled = None", _CHECKS, tmp_path,
                  ["--ai-framework", "mindspore"])
    assert host_layer_norm.has_compiled_bodies()  # built here (setup.py): the comparison compares two paths
    assert sorted(compiled) == sorted(python)
    assert {"megatron_dx", "megatron_dw", "strided_dx", "no_affine_dx", "two_dims_db", "edge"} <= set(compiled)
    for key, value in python.items():
        assert np.array_equal(compiled[key], value, equal_nan=True), key
