"""mindspeed_ms.compat.host_silu: ``F.silu`` of float32 tensors on the host computes what PyTorch computes (values and
input gradients at megatron's SwiGLU shapes and on edge inputs, compared with the reference interpreter), through
the host Function; float16 and in-place calls still go to MSAdapter's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from _helpers import ROOT, counting_prelude, reference_python, result_line, run_python, subprocess_env

_SCRIPT = '''
import json, sys
import numpy as np
{prelude}
import torch
import torch.nn.functional as F
inputs = dict(np.load({inputs!r}))
out = {{}}
x0, g = inputs["x"], inputs["g"]
edge = x0.copy()
edge[0, 0, :6] = [-100.0, 100.0, 0.0, -0.0, np.inf, -np.inf]
edge[0, 1, :1] = [np.nan]
for name, x in (("megatron", x0), ("large", x0 * 30), ("edge", edge)):
    xt = torch.tensor(x).requires_grad_(True)
    a, b = torch.chunk(xt, 2, dim=-1)  # megatron's glu: silu of the first half of the fc1 output
    y = F.silu(a) * b
    y.backward(torch.tensor(g[..., :64]))
    out[name] = y.detach().numpy()
    out[name + "_dx"] = xt.grad.numpy()
half = F.silu(torch.tensor(x0[:2]).half())
out["half"] = half.float().numpy()
inplace = torch.tensor(x0[:2])
F.silu(inplace, inplace=True)
out["inplace"] = inplace.numpy()
{count}
np.savez({output!r}, **out)
print("RESULT " + json.dumps(sorted(out)))
'''

_COUNTER = counting_prelude("host_silu", "silu_forward")


def test_silu_of_float32_runs_on_the_host_and_matches_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    np.savez(tmp_path / "inputs.npz", x=rng.standard_normal((16, 2, 128)).astype(np.float32),
             g=rng.standard_normal((16, 2, 128)).astype(np.float32))
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))

    def run(python: str, prelude: str, count: str, extra: list[str], name: str) -> dict:
        output = tmp_path / f"{name}.npz"
        script = _SCRIPT.format(prelude=prelude, inputs=str(tmp_path / "inputs.npz"), count=count, output=str(output))
        result_line(run_python(python, "-c", script, *extra, env=env))
        return dict(np.load(output))

    expected = run(reference_python(), "", "", [], "reference")
    got = run(sys.executable, _COUNTER, "out['host_calls'] = np.array(CALLS[0])", ["--ai-framework", "mindspore"],
              "candidate")
    assert int(got.pop("host_calls")) == 3  # the three float32 silu calls; not the float16 or the in-place one
    assert sorted(got) == sorted(expected)
    for key, want in expected.items():
        have = got[key]
        tolerance = 1e-3 if key == "half" else 1e-5
        np.testing.assert_allclose(have, want, rtol=tolerance, atol=tolerance * 1e-2, equal_nan=True, err_msg=key)
        if key != "half":  # near PyTorch's bits: a few units in the last place of the largest value
            finite = np.isfinite(want) & np.isfinite(have)
            scale = float(np.abs(want[finite]).max())
            worst = float(np.abs(have[finite] - want[finite]).max())
            assert worst <= 8 * 2.0**-23 * scale, (key, worst, scale)
