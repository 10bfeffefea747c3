"""mindspeed_ms.compat.grad_edges and reduction_grad_edges: PyTorch's gradients at the edges (zero norms, pow(x, 0), a
tensor exponent at a zero base, division by a zero, logsumexp and softmax with infinities, sign, cumprod through zeros,
baddbmm's input with beta=0), through the adaptor's patches in a child interpreter (importing MSAdapter in pytest's
process patches importlib.metadata); PyTorch's values are compared by tests/conformance/cases/ops_special_grad.py."""

from __future__ import annotations

import sys
import textwrap

import mindspore
import numpy as np
from _helpers import ROOT, run_python, subprocess_env

from mindspeed_ms.compat import reduction_grad_edges

_THROUGH_THE_ADAPTOR = '''
import math
import os

os.environ["MINDSPEED_AI_FRAMEWORK"] = "mindspore"
import mindspeed_ms.adaptor  # noqa: F401  (the built-in patches: these wrappers among them)
import numpy as np
import torch

from mindspeed_ms.compat import grad_edges


def leaf(values):
    return torch.tensor(values, dtype=torch.float32).requires_grad_(True)


def grad_of(function, *leaves):
    out = function(*leaves)
    out.backward(torch.ones_like(out))
    return [leaf.grad.numpy() for leaf in leaves]


x = leaf([[0.0, 0.0], [3.0, -4.0]])
(gx,) = grad_of(lambda x: torch.norm(x, dim=1), x)
assert gx.tolist() == [[0.0, 0.0], [0.6000000238418579, -0.800000011920929]], gx
x = leaf([[0.0, 0.0], [3.0, -4.0]])
(gx,) = grad_of(lambda x: x.norm(3, 1, True), x)
assert gx[0].tolist() == [0.0, 0.0] and np.isfinite(gx).all(), gx
x = leaf([0.0, 0.0, 0.0])
assert grad_of(lambda x: torch.linalg.vector_norm(x), x)[0].tolist() == [0.0, 0.0, 0.0]
assert float(torch.norm(torch.tensor([3.0, 4.0]))) == 5.0  # no gradient wanted: the op as it was

x = leaf([0.0, 2.0])
assert grad_of(lambda x: x ** 0, x)[0].tolist() == [0.0, 0.0]
base, exponent = leaf([0.0, 0.0, 2.0]), leaf([0.0, 2.0, 0.0])
gb, ge = grad_of(torch.pow, base, exponent)
assert gb.tolist() == [0.0, 0.0, 0.0] and ge[:2].tolist() == [0.0, 0.0], (gb, ge)
assert math.isclose(float(ge[2]), math.log(2.0), rel_tol=1e-6)

a, b = leaf([1.0, 0.0, -1.0]), leaf([0.0, 0.0, -0.0])
ga, gb = grad_of(lambda a, b: a / b, a, b)
assert ga.tolist() == [math.inf, math.inf, -math.inf], ga
assert gb[0] == -math.inf and np.isnan(gb[1]) and gb[2] == math.inf, gb
a, b = leaf([[1.0], [2.0]]), leaf([0.0, 4.0])  # broadcast: the gradients summed to each operand's shape
ga, gb = grad_of(lambda a, b: a / b, a, b)
assert ga.tolist() == [[math.inf], [math.inf]] and gb.tolist() == [-math.inf, -0.1875], (ga, gb)

x = leaf([[1.0, math.inf, 0.0], [-math.inf, -math.inf, -math.inf]])
(g,) = grad_of(lambda x: torch.logsumexp(x, 1), x)
assert g[0, 0] == 0.0 and np.isnan(g[0, 1]) and g[0, 2] == 0.0 and np.isnan(g[1]).all(), g
x = leaf([[1.0, -math.inf, 0.0], [-math.inf, -math.inf, -math.inf]])
(g,) = grad_of(lambda x: torch.softmax(x, -1), x)
assert np.isfinite(g[0]).all() and np.isnan(g[1]).all(), g
x = leaf([-1.0, 0.0, 2.0])
assert grad_of(torch.sign, x)[0].tolist() == [0.0, 0.0, 0.0]
x = leaf([2.0, 0.0, 3.0, 4.0])
assert grad_of(lambda x: torch.cumprod(x, 0), x)[0].tolist() == [1.0, 32.0, 0.0, 0.0]
c, a, b = leaf([[[1.0, -2.0]]]), leaf([[[1.0, 2.0]]]), leaf([[[1.0, 0.0], [2.0, 1.0]]])
gc, _, _ = grad_of(lambda c, a, b: torch.baddbmm(c, a, b, beta=0.0), c, a, b)
assert gc.tolist() == [[[0.0, 0.0]]], gc
print("checked")
'''


def test_the_gradients_through_the_adaptor() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    assert "checked" in run_python(sys.executable, "-c", textwrap.dedent(_THROUGH_THE_ADAPTOR), env=env)


def test_norm_backward_is_pytorchs_formula_with_zero_rows_masked() -> None:
    x = mindspore.Tensor(np.array([[0.0, 0.0], [3.0, -4.0]], np.float32))
    norm = mindspore.Tensor(np.array([0.0, 5.0], np.float32))
    grad = mindspore.Tensor(np.array([2.0, 10.0], np.float32))
    result = reduction_grad_edges.norm_backward(grad, x, norm, 2.0, (1,), False).asnumpy()
    assert result.tolist() == [[0.0, 0.0], [6.0, -8.0]]


def test_norm_backward_of_higher_powers() -> None:
    x = mindspore.Tensor(np.array([[0.0, 0.0], [1.0, -2.0]], np.float32))
    norm = mindspore.Tensor(np.array([[0.0], [9.0 ** (1 / 3)]], np.float32))
    grad = mindspore.Tensor(np.array([[1.0], [1.0]], np.float32))
    result = reduction_grad_edges.norm_backward(grad, x, norm, 3.0, (1,), True).asnumpy()
    expected = np.array([1.0, -4.0]) / 9.0 ** (2 / 3)  # x |x| / norm^2
    assert result[0].tolist() == [0.0, 0.0]
    assert np.allclose(result[1], expected, rtol=1e-6)


def test_cumprod_backward_through_zeros_is_pytorchs_exact_formula() -> None:
    x = np.array([[2.0, 0.0, 3.0, 4.0], [2.0, 0.0, 3.0, 0.0], [0.0, 2.0, 3.0, 1.0]], np.float32)
    grad = np.array([[1.0, 2.0, 3.0, 4.0]] * 3, np.float32)
    result = reduction_grad_edges.cumprod_backward(grad, x, np.cumprod(x, axis=1), 1)
    # row 0: d/dx1 = 2 * (2 + 3 * 3 + 4 * 3 * 4) = 118; row 2 (first zero at 0): 1 + 2*2 + 3*6 + 4*6 = 47
    assert result.tolist() == [[1.0, 118.0, 0.0, 0.0], [1.0, 22.0, 0.0, 0.0], [47.0, 0.0, 0.0, 0.0]]
    no_zero = np.array([2.0, 0.5, 4.0], np.float32)
    assert np.allclose(reduction_grad_edges.cumprod_backward(np.ones(3, np.float32), no_zero, np.cumprod(no_zero), 0),
                       [1.0 + 0.5 + 2.0, 2.0 + 8.0, 1.0])


_EMPTY = '''
import os

os.environ["MINDSPEED_AI_FRAMEWORK"] = "mindspore"
import mindspeed_ms.adaptor  # noqa: F401
import torch

x = torch.ones(2, 0, requires_grad=True)
out = x.sum(1)
out.backward(torch.ones(2))
assert out.tolist() == [0.0, 0.0] and tuple(x.grad.shape) == (2, 0)
y = torch.ones(0, requires_grad=True)
mean = y.mean()
mean.backward()
assert mean.isnan().item() and tuple(y.grad.shape) == (0,)
z = torch.tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]], requires_grad=True)
z.std(1).sum().backward()  # a constant row: PyTorch's masked std backward, 0 (not nan)
assert z.grad[0].tolist() == [0.0, 0.0, 0.0] and abs(z.grad[1, 0].item() + 0.5) < 1e-6, z.grad
print("checked")
'''


def test_reductions_of_an_empty_tensor_and_std_of_a_constant_row_backpropagate() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    assert "checked" in run_python(sys.executable, "-c", textwrap.dedent(_EMPTY), env=env)
