"""mindspeed_ms.compat.recorded_inplace: which in-place multiplications and divisions of a recorded tensor run as the
host Function (their values and gradients against PyTorch: tests/conformance/cases/fix_recorded_inplace.py).

The Function shows in autograd's graph: the recorded copy that wrote the result (``InplaceCopy``) has it as its
source (``HostBinary``); MindSpore's own path has its ``Div``/``Mul`` there, after a clone of ``self``."""

from __future__ import annotations

import json
import sys
import textwrap

from _helpers import ROOT, run_python, subprocess_env

_SCRIPT = '''
import json
import mindspeed_ms.adaptor
import torch


def source(tensor):
    """The name of the node the in-place write's copy took its values from."""
    copy = tensor.grad_fn
    return copy.next_functions[1][0].name() if copy.name() == "InplaceCopy" else copy.name()


def divided(make, operand, op="div_"):
    leaf = torch.tensor([1.0, 2.0, 4.0], requires_grad=True)
    result = make(leaf)
    getattr(result, op)(operand)
    return source(result)


out = {
    "by_int": divided(lambda x: x * 2.0, 4),
    "by_float": divided(lambda x: x * 2.0, 0.5),
    "times_float": divided(lambda x: x * 2.0, 0.5, "mul_"),
    "by_int32_tensor": divided(lambda x: x * 2.0, torch.tensor(7, dtype=torch.int32)),
    "by_float_tensor": divided(lambda x: x * 2.0, torch.tensor([1.0, 2.0, 3.0])),
    "by_float64_tensor": divided(lambda x: x * 2.0, torch.tensor(3.0, dtype=torch.float64)),
    "by_grad_tensor": divided(lambda x: x * 2.0, torch.tensor(3.0, requires_grad=True)),
    "float64_self": divided(lambda x: x.double() * 2.0, 4),
}
print(json.dumps(out))
'''


def test_the_host_function_takes_numbers_and_float32_operands_without_a_gradient() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    printed = run_python(sys.executable, "-c", textwrap.dedent(_SCRIPT), "--ai-framework", "mindspore", env=env)
    got = json.loads(printed.strip().splitlines()[-1])
    for key in ("by_int", "by_float", "times_float", "by_int32_tensor", "by_float_tensor"):
        assert got[key] == "HostBinary", (key, got[key])
    # left to MindSpore's kernels: a float64 operand (promotion), an operand that requires a gradient, float64 self
    for key in ("by_float64_tensor", "by_grad_tensor", "float64_self"):
        assert got[key] != "HostBinary", (key, got[key])
