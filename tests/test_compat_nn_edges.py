"""mindspeed_ms.compat.nn_edges: F.normalize's eps, F.dropout(p=1), bfloat16 log_softmax, cross_entropy with every
target ignored and logsigmoid at the edges, through the adaptor's patches in a child interpreter (importing MSAdapter
in pytest's process patches importlib.metadata); PyTorch's values are compared by
tests/conformance/cases/ops_special_grad.py."""

from __future__ import annotations

import sys
import textwrap

from _helpers import ROOT, run_python, subprocess_env

_THROUGH_THE_ADAPTOR = '''
import math
import os

os.environ["MINDSPEED_AI_FRAMEWORK"] = "mindspore"
import mindspeed_ms.adaptor  # noqa: F401  (the built-in patches: these wrappers among them)
import numpy as np
import torch


def leaf(values):
    return torch.tensor(values, dtype=torch.float32).requires_grad_(True)


def grad_of(function, *leaves):
    out = function(*leaves)
    out.backward(torch.ones_like(out))
    return [leaf.grad.numpy() for leaf in leaves]


x = leaf([[0.0, 0.0], [3.0, 4.0]])
out = torch.nn.functional.normalize(x, dim=1)
assert out.numpy().tolist() == [[0.0, 0.0], [0.6000000238418579, 0.800000011920929]], out
out.sum().backward()
assert (x.grad.numpy()[0] == np.float32(1e12)).all(), x.grad  # 1 / eps (PyTorch's too), not nan

x = leaf([1.0, -2.0])
(gx,) = grad_of(lambda x: torch.nn.functional.dropout(x, 1.0), x)
assert gx.tolist() == [0.0, 0.0]
assert torch.nn.functional.dropout(x, 1.0).numpy().tolist() == [0.0, -0.0]
assert torch.nn.Dropout(1.0)(x).numpy().tolist() == [0.0, -0.0]

x = torch.tensor([[1.0, 2.0, 3.0]]).to(torch.bfloat16).requires_grad_(True)
y = torch.nn.functional.log_softmax(x, -1)
assert y.dtype == torch.bfloat16
y.backward(torch.tensor([[4.0, 5.0, 6.0]]).to(torch.bfloat16))
assert x.grad.dtype == torch.bfloat16 and np.isfinite(x.grad.float().numpy()).all()

x = leaf([[1.0, 2.0], [0.0, 1.0]])
(gx,) = grad_of(lambda x: torch.nn.functional.cross_entropy(x, torch.tensor([-100, -100])), x)
assert gx.tolist() == [[0.0, 0.0], [0.0, 0.0]], gx
x = leaf([-math.inf, -100.0, 0.0, 30.0, math.inf])
out = torch.nn.functional.logsigmoid(x)
assert out.numpy()[:3].tolist() == [-math.inf, -100.0, -0.6931471824645996], out
out.backward(torch.ones_like(out))
g = x.grad.numpy()
assert g[0] == 1.0 and g[1] == 1.0 and g[2] == 0.5 and 0 < g[3] < 1e-12 and g[4] == 0.0, g
print("checked")
'''


def test_the_nn_edges_through_the_adaptor() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    assert "checked" in run_python(sys.executable, "-c", textwrap.dedent(_THROUGH_THE_ADAPTOR), env=env)
