"""mindspeed_ms.compat.host_special_values: which calls of ``torch.isnan``/``isinf``/``isfinite`` read the host memory
(their values against PyTorch: tests/conformance/cases/fix_host_special_values.py)."""

from __future__ import annotations

import json
import sys
import textwrap

from _helpers import ROOT, run_python, subprocess_env

_SCRIPT = '''
import json
import mindspeed_ms.adaptor
import torch
from mindspeed_ms.compat import host_special_values

READS = [0]
_host_array = host_special_values.host_array


def counted(tensor, **kwargs):
    READS[0] += 1
    return _host_array(tensor, **kwargs)


host_special_values.host_array = counted


def reads(call):
    before = READS[0]
    call()
    return READS[0] - before


loss = torch.tensor([2.0, 3.0], requires_grad=True) * 1.5
values = torch.tensor([[1.0, float("nan")], [float("inf"), 0.0]])
out = {
    "loss_isnan": reads(lambda: bool(torch.isnan(loss[0]))),
    "method_isinf": reads(lambda: values.isinf()),
    "isfinite": reads(lambda: torch.isfinite(values)),
    "strided": reads(lambda: torch.isnan(values.t())),
    "float64": reads(lambda: torch.isnan(values.double())),
}
print(json.dumps(out))
'''


def test_contiguous_float32_inputs_are_read_on_the_host() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    printed = run_python(sys.executable, "-c", textwrap.dedent(_SCRIPT), "--ai-framework", "mindspore", env=env)
    got = json.loads(printed.strip().splitlines()[-1])
    # two reads each: the input's memory and the new bool tensor's
    assert (got["loss_isnan"], got["method_isinf"], got["isfinite"]) == (2, 2, 2), got
    assert (got["strided"], got["float64"]) == (0, 0), got  # the wrapped kernels
