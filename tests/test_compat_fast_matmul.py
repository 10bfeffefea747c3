"""mindspeed_ms.compat.fast_matmul: ``torch.matmul`` of a transposed matrix (megatron's ``input @ weight.t()`` and
``grad_output.t() @ input``) computes what PyTorch computes, values and gradients, without the transposed copy.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied
(``--ai-framework mindspore``) on the same inputs; results are compared to float32 GEMM rounding. The MindSpore run
also checks that the transposed calls took MatMul's transpose flags (bit-identical to a direct ``ops.MatMul`` with
them) and that the other layouts reached MSAdapter's matmul (bit-identical to it).
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
x3, w, g2, x2 = (torch.tensor(given[name]) for name in ("x3", "w", "g2", "x2"))
out = {{}}
out["forward_3d"] = torch.matmul(x3, w.t()).numpy()
out["method_2d"] = x2.matmul(w[:512].t()).numpy()
out["operator_2d"] = (x2 @ w[:512].t()).numpy()
out["weight_grad"] = g2.t().matmul(x2).numpy()
out["both_transposed"] = torch.matmul(g2.t(), w[:512].t().t().t()).numpy()
out["plain"] = torch.matmul(x2, w[:512]).numpy()
out["batched"] = torch.matmul(x3, x3.transpose(1, 2)).numpy()
out["vector"] = torch.matmul(x2, x2[0]).numpy()
out["slice"] = torch.matmul(x2[:, :256], w[:256, :256].t()).numpy()
out["half"] = torch.matmul(x2.half(), w[:512].half().t()).float().numpy()
out["int"] = torch.matmul(torch.arange(6).reshape(2, 3), torch.arange(6).reshape(2, 3).t()).numpy()
into = torch.zeros(512, 512)
torch.matmul(x2, w[:512].t(), out=into)
out["out"] = into.numpy()
# megatron's linear: forward with the transposed weight, backward of a sum of squares
a = x3.clone().requires_grad_()
b = w.clone().requires_grad_()
(torch.matmul(a, b.t()) ** 2).sum().backward()
out["grad_input"] = a.grad.numpy()
out["grad_weight"] = b.grad.numpy()
# without autograd (megatron's linear Function): the view made by t() is read through the tensor it transposes
p = torch.nn.Parameter(w.clone())
with torch.no_grad():
    out["no_grad_forward"] = torch.matmul(x3, p.t()).numpy()
    out["no_grad_weight_grad"] = g2.t().matmul(x2).numpy()
    view = p.t()
    p.data = w.flip(0).clone()  # the parameter's memory replaced: the view keeps the former values
    out["no_grad_replaced"] = torch.matmul(x3, view).numpy()
# autograd through the view: the gradient reaches the view's own hook
a, b = x3.clone().requires_grad_(), w.clone().requires_grad_()
view = b.t()
seen = []
view.register_hook(lambda grad: seen.append(grad.clone()))
(torch.matmul(a, view) ** 2).sum().backward()
out["view_hook"], out["view_hook_weight"] = seen[0].numpy(), b.grad.numpy()
{checks}
np.savez(sys.argv[2], **out)
'''

#: MindSpore only: the flagged MatMul ran (bit-identical to it), and the other layouts went to MSAdapter's matmul
_CHECKS = '''
from mindspore import ops
import msadapter.ops.blas as blas
original = blas.matmul.__wrapped__
assert np.array_equal(out["forward_3d"], ops.MatMul(transpose_b=True)(x3.reshape(-1, 512), w).reshape(
    128, 4, 1024).numpy())
assert np.array_equal(out["weight_grad"], ops.MatMul(transpose_a=True)(g2, x2).numpy())
assert np.array_equal(out["both_transposed"], ops.MatMul(transpose_a=True, transpose_b=True)(g2, w[:512]).numpy())
for key, value in (("plain", original(x2, w[:512])), ("batched", original(x3, x3.transpose(1, 2))),
                   ("slice", original(x2[:, :256], w[:256, :256].t()))):
    assert np.array_equal(out[key], value.numpy()), key
from mindspeed_ms.compat import fast_matmul
assert np.array_equal(out["no_grad_forward"], out["forward_3d"])
q = torch.nn.Parameter(w.clone())
with torch.no_grad():
    assert fast_matmul._untransposed(q.t(), (512, 1024)) is q  # no view op
    stale = q.t()
    q.data = w.flip(0).clone()
    assert fast_matmul._untransposed(stale, (512, 1024)) is not q
assert fast_matmul._untransposed(q.t(), (512, 1024)) is not q  # autograd on, q requires grad: the view op
'''


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_transposed_matmul_matches_pytorch(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    inputs = {"x3": rng.standard_normal((128, 4, 512)), "w": rng.standard_normal((1024, 512)),
              "g2": rng.standard_normal((512, 512)), "x2": rng.standard_normal((512, 512))}
    np.savez(tmp_path / "inputs.npz", **{name: value.astype(np.float32) for name, value in inputs.items()})
    expected = _run(reference_python(), "", "", tmp_path, [])
    got = _run(sys.executable, "import mindspeed_ms.adaptor", _CHECKS, tmp_path, ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        # float32 GEMM: sums of 512-2048 products of unit normals; orderings differ between the libraries.
        # float16 results are rounded to half precision: one unit in the last place of the largest (2**-10).
        scale = max(1.0, float(np.abs(value).max()))
        tolerance = 2.0**-10 * scale if key == "half" else 1e-5 * scale
        assert np.abs(got[key].astype(np.float64) - value).max() <= tolerance, key
