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
from _helpers import ROOT, reference_python, result_line, run_python, subprocess_env

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
