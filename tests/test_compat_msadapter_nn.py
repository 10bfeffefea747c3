"""mindspeed_ms.compat.msadapter_nn: ``torch.nn.RMSNorm`` under MSAdapter computes what PyTorch's does.

The same inputs and weights go through ``torch.nn.RMSNorm`` in the PyTorch reference interpreter and in a
MindSpore interpreter with the adaptor applied (``--ai-framework mindspore``); outputs and gradients (input and
weight) are compared.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _helpers import ROOT, counting_prelude, reference_python, result_line, run_python, subprocess_env

#: (normalized_shape, eps, elementwise_affine) of each case; input shape (2, 3, 4).
CASES = (((4,), None, True), ((3, 4), 1e-5, True), ((4,), 1e-6, False))
RTOL = 1e-5

_SCRIPT = '''
import json, sys
import numpy as np
{prelude}
import torch
inputs = dict(np.load({inputs!r}))
out = {{}}
for index, (shape, eps, affine) in enumerate({cases!r}):
    norm = torch.nn.RMSNorm(shape, eps=eps, elementwise_affine=affine)
    if affine:
        with torch.no_grad():
            norm.weight.copy_(torch.tensor(inputs["weight%d" % index]))
    x = torch.tensor(inputs["x"]).requires_grad_(True)
    y = norm(x)
    (y * torch.tensor(inputs["upstream"])).sum().backward()
    out["y%d" % index] = y.detach().numpy().tolist()
    out["dx%d" % index] = x.grad.numpy().tolist()
    if affine:
        out["dw%d" % index] = norm.weight.grad.numpy().tolist()
out["names"] = sorted(name for name, _ in torch.nn.RMSNorm(4).named_parameters())
print("RESULT " + json.dumps(out))
'''


def _run(python: str, prelude: str, inputs: Path, extra: list[str]) -> dict:
    script = textwrap.dedent(_SCRIPT.format(prelude=prelude, inputs=str(inputs), cases=CASES))
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    return result_line(run_python(python, "-c", script, *extra, env=env))


def test_rmsnorm_matches_pytorchs_outputs_and_gradients(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    arrays = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32),
              "upstream": rng.standard_normal((2, 3, 4)).astype(np.float32)}
    for index, (shape, _, _) in enumerate(CASES):
        arrays[f"weight{index}"] = rng.standard_normal(shape).astype(np.float32)
    np.savez(tmp_path / "inputs.npz", **arrays)
    expected = _run(reference_python(), "", tmp_path / "inputs.npz", [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor", tmp_path / "inputs.npz", ["--ai-framework", "mindspore"])
    assert got["names"] == expected["names"] == ["weight"]
    for key, value in expected.items():
        if key == "names":
            continue
        np.testing.assert_allclose(np.array(got[key]), np.array(value), rtol=RTOL, atol=1e-6, err_msg=key)


_MEGATRON = '''
import json, sys
import numpy as np
{prelude}
import torch
inputs = dict(np.load({inputs!r}))
out = {{}}
x0, g = inputs["x"], inputs["g"]
cases = {{"megatron": (x0, None, True), "eps": (x0 * 1e-3, 1e-2, True), "no_weight": (x0, 1e-6, False),
         "tiny_values": (x0 * 1e-20, 1e-5, True), "large_values": (x0 * 1e15, None, True),
         "strided": (np.ascontiguousarray(x0.transpose(1, 0, 2)).transpose(1, 0, 2), None, True)}}
for name, (x, eps, affine) in cases.items():
    norm = torch.nn.RMSNorm(64, eps=eps, elementwise_affine=affine)
    if affine:
        with torch.no_grad():
            norm.weight.copy_(torch.tensor(inputs["w"]))
    xt = torch.tensor(x)
    if name == "strided":  # a view whose memory is not its own, in the order megatron's transposes leave
        xt = torch.tensor(np.ascontiguousarray(x0.transpose(1, 0, 2))).transpose(0, 1)
    xt.requires_grad_(True)
    y = norm(xt)
    y.backward(torch.tensor(g))
    out[name] = y.detach().numpy().tolist()
    out[name + "_dx"] = xt.grad.numpy().tolist()
    if affine:
        out[name + "_dw"] = norm.weight.grad.numpy().tolist()
{count}
print("RESULT " + json.dumps(out))
'''

_COUNT = '''
from mindspeed_ms.compat import host_rms_norm
out["host_calls"] = CALLS[0]
'''

_COUNTER = counting_prelude("host_rms_norm", "rms_norm_forward")


@pytest.mark.parametrize("kernels", ["host", "disabled"])
def test_rmsnorm_of_float32_runs_on_the_host_and_matches_pytorch_at_megatrons_shapes(tmp_path: Path,
                                                                                     kernels: str) -> None:
    rng = np.random.default_rng(5)
    np.savez(tmp_path / "inputs.npz", x=rng.standard_normal((32, 2, 64)).astype(np.float32),
             g=rng.standard_normal((32, 2, 64)).astype(np.float32), w=rng.standard_normal(64).astype(np.float32))
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    reference_env = dict(env)
    if kernels == "disabled":  # the CPU kernels' provider off: MSAdapter's ops, as on another device
        env["MINDSPEED_MS_DISABLE"] = "msadapter_cpu_kernels"

    def run(python: str, prelude: str, count: str, extra: list[str], environ: dict[str, str]) -> dict:
        script = _MEGATRON.format(prelude=prelude, inputs=str(tmp_path / "inputs.npz"), count=count)
        return result_line(run_python(python, "-c", script, *extra, env=environ))

    expected = run(reference_python(), "", "", [], reference_env)
    got = run(sys.executable, _COUNTER, _COUNT, ["--ai-framework", "mindspore"], env)
    # every case is float32: each went through the host Function, none with the provider off
    assert got.pop("host_calls") == (6 if kernels == "host" else 0)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        scale = max(float(np.abs(np.array(value)).max()), 1e-30)
        np.testing.assert_allclose(np.array(got[key]), np.array(value), rtol=RTOL, atol=1e-6 * scale, err_msg=key)
