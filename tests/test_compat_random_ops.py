"""mindspeed_ms.compat.random_ops: normal_, bernoulli, nn.init and randperm draw from torch's stream on CPU.

Runs under MSAdapter with the built-in patches in a subprocess; what PyTorch does is in the assertions
(and, for replay and distributions, in tests/conformance/cases/fix_random_state.py against the reference).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from _helpers import ROOT, subprocess_env

SCRIPT = """
import json
import mindspeed_ms.adaptor  # noqa: F401
import torch
from mindspeed_ms.compat.inplace_checks import InPlaceWriteError

result = {}
torch.manual_seed(0)
big = torch.empty(20000).normal_(3.0, 2.0)
result["normal_moments"] = [round(float(big.mean()), 1), round(float(big.std()), 1)]
base = torch.zeros(3, 4)
base[:, 1:3].normal_()
result["normal_view_reaches_base"] = [bool((base[:, c] != 0).all()) for c in range(4)]
refused = []
for call in (lambda: torch.zeros(3).normal_(0.0, -1.0), lambda: torch.zeros(3, dtype=torch.int64).normal_(),
             lambda: torch.zeros(3).bernoulli_(2.0), lambda: torch.bernoulli(torch.full((3,), -0.5))):
    try:
        call()
    except InPlaceWriteError as error:
        refused.append(isinstance(error, RuntimeError))
result["refused"] = refused

weight = torch.nn.Parameter(torch.zeros(64, 64))
torch.nn.init.normal_(weight, mean=0.0, std=0.02)
result["init_parameter"] = [weight.requires_grad, weight.grad_fn is None, round(float(weight.std()), 2)]
bias = torch.nn.Parameter(torch.zeros(1000))
torch.nn.init.uniform_(bias, -0.5, 0.5)
result["init_uniform_range"] = [float(bias.min()) >= -0.5, float(bias.max()) < 0.5, float(bias.std()) > 0.2]

torch.manual_seed(1)
perms = [torch.randperm(50) for _ in range(2)]
torch.manual_seed(2)
other = torch.randperm(50)
result["randperm"] = [sorted(perms[0].tolist()) == list(range(50)), perms[0].dtype == torch.int64,
                      not torch.equal(perms[0], perms[1]), not torch.equal(perms[0], other)]
generator = torch.Generator()
generator.manual_seed(9)
a, b = torch.randperm(30, generator=generator), torch.randperm(30, generator=generator)
generator.manual_seed(9)
result["randperm_generator"] = [not torch.equal(a, b), torch.equal(torch.randperm(30, generator=generator), a)]
generator.manual_seed(4)
drawn = torch.empty(3).random_(100, generator=generator)
generator.manual_seed(4)
result["random_generator_replays"] = torch.equal(torch.empty(3).random_(100, generator=generator), drawn)
try:
    torch.zeros(2).random_(5, 2)
    result["random_refuses_empty_range"] = False
except InPlaceWriteError as error:
    result["random_refuses_empty_range"] = isinstance(error, RuntimeError)
result["bernoulli_dtype"] = str(torch.bernoulli(torch.full((4,), 0.5, dtype=torch.float64)).dtype)
print(json.dumps(result))
"""


def test_random_ops_on_the_cpu_backend() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT), MINDSPEED_AI_FRAMEWORK="mindspore")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["normal_moments"] == [3.0, 2.0]
    assert result["normal_view_reaches_base"] == [False, True, True, False]
    assert result["refused"] == [True] * 4
    assert result["init_parameter"] == [True, True, 0.02]
    assert result["init_uniform_range"] == [True, True, True]
    assert result["randperm"] == [True] * 4
    assert result["randperm_generator"] == [True, True]
    assert result["bernoulli_dtype"] == "Float64"
    assert result["random_generator_replays"]
    assert result["random_refuses_empty_range"]
