"""mindspeed_ms.compat.fast_matmul: ``torch.matmul`` with a 2-D right operand (megatron's ``input @ weight.t()``,
``grad_output @ weight`` and ``grad_output.t() @ input``) computes what PyTorch computes, values and gradients.

One script runs in the PyTorch reference interpreter and in a MindSpore interpreter with the adaptor applied
(``--ai-framework mindspore``) on the same inputs; results are compared to float32 GEMM rounding. In the MindSpore
run every product is booked to the route it took (a counter around the host GEMM, NumPy's matmul, that the script
installs): float32 products no gradient is recorded through must take the host GEMM (bit-identical to NumPy's
matmul of the same arrays); products recorded by autograd take MatMul with its transpose flags, bit-identical to a
direct ``ops.MatMul`` with them; float16, integers, batched right operands, vectors and ``out=`` reach MSAdapter's
matmul (bit-identical to it).
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
x3, w, g2, x2, tx, tw, tg = (torch.tensor(given[name]) for name in ("x3", "w", "g2", "x2", "tx", "tw", "tg"))
out, routes = {{}}, {{}}


def keep(key, value):
    out[key] = value.detach().numpy()
    routes[key] = taken()


keep("forward_3d", torch.matmul(x3, w.t()))
keep("method_2d", x2.matmul(w[:512].t()))
keep("operator_2d", x2 @ w[:512].t())
keep("weight_grad", g2.t().matmul(x2))
keep("both_transposed", torch.matmul(g2.t(), w[:512].t().t().t()))
keep("plain", torch.matmul(x2, w[:512]))
keep("input_grad_3d", torch.matmul(x3[:, :, :512].contiguous(), w[:512]))
keep("permuted_3d", torch.matmul(x3.transpose(0, 1), w.t()))
keep("strided", torch.matmul(x2[:, ::2], w[:256, ::2].t()))
keep("slice", torch.matmul(x2[:, :256], w[:256, :256].t()))
keep("batched", torch.matmul(x3, x3.transpose(1, 2)))
keep("vector", torch.matmul(x2, x2[0]))
keep("half", torch.matmul(x2.half(), w[:512].half().t()).float())
keep("int", torch.matmul(torch.arange(6).reshape(2, 3), torch.arange(6).reshape(2, 3).t()))
into = torch.zeros(512, 512)
torch.matmul(x2, w[:512].t(), out=into)
keep("out", into)
# the tiny size's shapes (hidden 64, 4 x 32 tokens): forward, input gradient, weight gradient
keep("tiny_forward", torch.matmul(tx, tw.t()))
keep("tiny_input_grad", tg.matmul(tw))
keep("tiny_weight_grad", tg.reshape(-1, 256).t().matmul(tx.reshape(-1, 64)))
# autograd records the product (operands requiring grad): MatMul, with its gradient
a = x3.clone().requires_grad_()
b = w.clone().requires_grad_()
keep("recorded", torch.matmul(a, b.t()))
(torch.matmul(a, b.t()) ** 2).sum().backward()
keep("grad_input", a.grad)
keep("grad_weight", b.grad)


class Linear(torch.autograd.Function):
    """megatron's LinearWithGradAccumulationAndAsyncCommunication at tp=1, without its bias and buffers"""

    @staticmethod
    def forward(ctx, input, weight):
        ctx.save_for_backward(input, weight)
        return torch.matmul(input, weight.t())

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        grad_input = grad_output.matmul(weight)
        grad_output = grad_output.view(-1, grad_output.shape[-1])
        total_input = input.view(-1, input.shape[-1])
        return grad_input, grad_output.t().matmul(total_input)


for name, (inputs, weight) in {{"mid": (x3, w), "tiny": (tx, tw)}}.items():
    a = inputs.clone().requires_grad_()
    b = torch.nn.Parameter(weight.clone())
    taken()
    y = Linear.apply(a, b)
    (y * y).sum().backward()
    keep(f"function_{{name}}", y)
    routes[f"function_{{name}}"] += taken()
    keep(f"function_{{name}}_grad_input", a.grad)
    keep(f"function_{{name}}_grad_weight", b.grad)
# without autograd (megatron's linear Function): a view made by t() is read where it is
p = torch.nn.Parameter(w.clone())
with torch.no_grad():
    keep("no_grad_forward", torch.matmul(x3, p.t()))
    view = p.t()
    p.data = w.flip(0).clone()  # the parameter's memory replaced: the view keeps the former values
    keep("no_grad_replaced", torch.matmul(x3, view))
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

#: PyTorch: nothing to count
_TORCH_PRELUDE = '''
def taken():
    return 0
'''

#: MindSpore: count the products the host GEMM computed (a counting function around the real one)
_MINDSPORE_PRELUDE = '''
import mindspeed_ms.adaptor
from mindspeed_ms.compat import fast_matmul

_host_calls = [0]
_host_matmul = fast_matmul.host_matmul


def _counted(left, right, result):
    _host_calls[0] += 1
    _host_matmul(left, right, result)


fast_matmul.host_matmul = _counted


def taken():
    calls, _host_calls[0] = _host_calls[0], 0
    return calls
'''

#: the products no gradient is recorded through, float32 with a 2-D right operand: the host GEMM, the same bits as
#: NumPy's matmul of these operands (leading dimensions folded into the rows)
_HOST = {"forward_3d": "x3, w.T", "method_2d": "x2, w[:512].T", "operator_2d": "x2, w[:512].T",
         "weight_grad": "g2.T, x2", "both_transposed": "g2.T, w[:512].T", "plain": "x2, w[:512]",
         "input_grad_3d": "x3[:, :, :512], w[:512]", "permuted_3d": "x3.transpose(1, 0, 2), w.T",
         "strided": "x2[:, ::2], w[:256, ::2].T", "slice": "x2[:, :256], w[:256, :256].T",
         "tiny_forward": "tx, tw.T", "tiny_input_grad": "tg, tw",
         "tiny_weight_grad": "tg.reshape(-1, 256).T, tx.reshape(-1, 64)",
         "no_grad_forward": "x3, w.T"}

#: MindSpore only: each product's route, and its bits on that route
_CHECKS = """
from mindspore import ops
import msadapter.ops.blas as blas
original = blas.matmul.__wrapped__
arrays = {name: given[name] for name in ("x3", "w", "g2", "x2", "tx", "tw", "tg")}
from mindspeed_ms.compat import blas_threads
threads = blas_threads.openblas_threads()
for key, operands in HOST.items():
    assert routes[key] == 1, (key, routes[key])
    left, right = eval(operands, {}, arrays)
    rows = np.ascontiguousarray(left).reshape(-1, left.shape[-1])
    if 4 not in right.strides:  # a layout BLAS cannot read (no unit stride): multiplied from a contiguous copy
        rows, right = np.ascontiguousarray(rows), np.ascontiguousarray(right)
    if threads is not None:  # on the thread count the host GEMM picks (OpenBLAS's bits may differ between counts)
        product = rows.shape[0] * rows.shape[1] * right.shape[1]
        threads.use(1 if product < blas_threads.ONE_THREAD_PRODUCT else threads.largest)
    assert np.array_equal(out[key], np.matmul(rows, right).reshape(out[key].shape)), key
for key in ("function_mid", "function_tiny"):
    assert routes[key] == 3, (key, routes[key])  # forward, input gradient, weight gradient
for key in ("batched", "vector", "half", "int", "out", "recorded", "grad_input", "grad_weight"):
    assert routes[key] == 0, (key, routes[key])
assert np.array_equal(out["recorded"], ops.MatMul(transpose_b=True)(x3.reshape(-1, 512), w).reshape(
    128, 4, 1024).numpy())
assert np.array_equal(out["half"], ops.MatMul(transpose_b=True)(x2.half(), w[:512].half()).float().numpy())
for key, value in (("batched", original(x3, x3.transpose(1, 2))), ("vector", original(x2, x2[0]))):
    assert np.array_equal(out[key], value.numpy()), key
q = torch.nn.Parameter(w.clone())
with torch.no_grad():
    assert fast_matmul._untransposed(q.t(), (512, 1024)) is q  # no view op
    stale = q.t()
    q.data = w.flip(0).clone()
    assert fast_matmul._untransposed(stale, (512, 1024)) is not q
assert fast_matmul._untransposed(q.t(), (512, 1024)) is not q  # autograd on, q requires grad: the view op
"""


def _run(python: str, prelude: str, checks: str, folder: Path, extra: list[str]) -> dict[str, np.ndarray]:
    taken = folder / f"{Path(python).parent.parent.name}.npz"
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    run_python(python, "-c", textwrap.dedent(_SCRIPT.format(prelude=prelude, checks=checks)),
               str(folder / "inputs.npz"), str(taken), *extra, env=env)
    with np.load(taken) as saved:
        return {name: saved[name] for name in saved.files}


def test_matmul_matches_pytorch_on_each_route(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    inputs = {"x3": rng.standard_normal((128, 4, 512)), "w": rng.standard_normal((1024, 512)),
              "g2": rng.standard_normal((512, 512)), "x2": rng.standard_normal((512, 512)),
              "tx": rng.standard_normal((32, 4, 64)), "tw": rng.standard_normal((256, 64)),
              "tg": rng.standard_normal((32, 4, 256))}
    np.savez(tmp_path / "inputs.npz", **{name: value.astype(np.float32) for name, value in inputs.items()})
    expected = _run(reference_python(), _TORCH_PRELUDE, "", tmp_path, [])
    got = _run(sys.executable, _MINDSPORE_PRELUDE, f"HOST = {_HOST!r}\n{_CHECKS}", tmp_path,
               ["--ai-framework", "mindspore"])
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        # float32 GEMM: sums of 64-2048 products of unit normals (gradients: of such sums); orderings differ
        # between the libraries. float16 results are rounded to half precision: one unit in the last place of the
        # largest (2**-10).
        scale = max(1.0, float(np.abs(value).max()))
        tolerance = 2.0**-10 * scale if key == "half" else 1e-5 * scale
        assert np.abs(got[key].astype(np.float64) - value).max() <= tolerance, key
