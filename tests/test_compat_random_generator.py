"""mindspeed_ms.compat.random_generator: ``generator=`` draws from the generator's own stream on the CPU backend.

The replay/independence facts are compared with real PyTorch in tests/conformance/cases/fix_random_state.py
(``generator_is_its_own_stream``, ``generator_methods``, ``randint_overloads``); here: the same facts under
MSAdapter with the built-in patches (subprocess), the global stream restored when the draw fails, the typed
refusal of a non-generator, and PyTorch's randint overloads parsed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from _helpers import ROOT, subprocess_env

from mindspeed_ms.compat import random_generator
from mindspeed_ms.compat.errors import AdaptationError, RandomGeneratorTypeError

SCRIPT = """
import importlib
import json
import mindspeed_ms.adaptor  # noqa: F401
import torch
from mindspeed_ms.compat.errors import RandomGeneratorTypeError
from mindspeed_ms.compat.random_generator import drawing_from

OPS = {
    "rand": lambda g: torch.rand(5, generator=g),
    "randn": lambda g: torch.randn(5, generator=g),
    "randint": lambda g: torch.randint(0, 1000, (5,), generator=g),
    "randint_high": lambda g: torch.randint(1000, (5,), generator=g),
    "normal": lambda g: torch.normal(0.0, 1.0, (5,), generator=g),
    "multinomial": lambda g: torch.multinomial(torch.ones(8), 4, generator=g),
    "randperm": lambda g: torch.randperm(8, generator=g),
    "bernoulli": lambda g: torch.bernoulli(torch.full((16,), 0.5), generator=g),
    "normal_": lambda g: torch.empty(5).normal_(generator=g),
    "uniform_": lambda g: torch.empty(5).uniform_(generator=g),
}
result = {}
for name, op in OPS.items():
    g, twin = torch.Generator(), torch.Generator()
    torch.manual_seed(0)
    expected = torch.rand(4)
    torch.manual_seed(0)
    g.manual_seed(3)
    first = op(g)
    global_untouched = torch.equal(torch.rand(4), expected)
    torch.manual_seed(1)
    g.manual_seed(3)
    twin.manual_seed(3)
    state = g.get_state()
    again, second = op(g), op(g)
    g.set_state(state)
    result[name] = [global_untouched, torch.equal(first, again), torch.equal(op(twin), first),
                    torch.equal(op(g), again) and torch.equal(op(g), second), not torch.equal(first, second)]

# torch.default_generator is the global stream, as in PyTorch
default = []
for op in (OPS["rand"], OPS["randperm"], OPS["randint"], lambda g: torch.empty(3).random_(100, generator=g)):
    torch.manual_seed(8)
    plain = op(None)
    torch.manual_seed(8)
    default.append(torch.equal(op(torch.default_generator), plain))
result["default_generator_is_global"] = default

seeds = importlib.import_module("mindspore.common.seed")
torch.manual_seed(5)
torch.rand(2)
before = (seeds._GLOBAL_SEED, dict(seeds._KERNEL_SEED))
g = torch.Generator().manual_seed(2)
try:
    with drawing_from("torch.rand", g):
        torch.rand(3)
        raise KeyError("inside")
except KeyError:
    pass
result["restored_on_error"] = (seeds._GLOBAL_SEED, dict(seeds._KERNEL_SEED)) == before
try:
    torch.rand(3, generator="seed")
    result["refuses_non_generator"] = False
except RandomGeneratorTypeError as error:
    result["refuses_non_generator"] = isinstance(error, TypeError) and "torch.rand" in str(error)
torch.manual_seed(0)
values = torch.randint(5, (400,))
result["randint_high_size"] = [int(values.min()), int(values.max()), str(values.dtype)]
result["randint_float"] = str(torch.randint(0, 9, (3,), dtype=torch.float32).dtype)
torch.manual_seed(0)
drawn = torch.multinomial(torch.tensor([0.1, 0.9], dtype=torch.float64), 4000, replacement=True)
result["multinomial_float64"] = [str(drawn.dtype), round(float(drawn.float().mean()), 1)]
print(json.dumps(result))
"""


def test_generators_draw_from_their_own_stream() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT), MINDSPEED_AI_FRAMEWORK="mindspore")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("rand", "randn", "randint", "randint_high", "normal", "multinomial", "randperm", "bernoulli",
                 "normal_", "uniform_"):
        # [global stream untouched, g.manual_seed replays, twin agrees, get_state/set_state replays, next differs]
        assert result[name] == [True] * 5, name
    assert result["default_generator_is_global"] == [True] * 4
    assert result["restored_on_error"]
    assert result["refuses_non_generator"]
    assert result["randint_high_size"] == [0, 4, "Int64"]
    assert result["randint_float"] == "Float32"
    assert result["multinomial_float64"] == ["Int64", 0.9]  # raised bad_function_call (WeightedRandomSampler)


@pytest.mark.parametrize(("args", "kwargs", "expected"), [
    ((5, (3,)), {}, (0, 5, (3,))),
    ((2, 5, (3,)), {}, (2, 5, (3,))),
    ((5,), {"size": [2, 2]}, (0, 5, (2, 2))),
    ((), {"low": 1, "high": 4, "size": (2,)}, (1, 4, (2,))),
    ((1,), {"high": 4, "size": (2,)}, (1, 4, (2,))),
])
def test_randint_overloads_are_pytorchs(args: tuple, kwargs: dict, expected: tuple) -> None:
    assert random_generator.randint_arguments(args, dict(kwargs)) == expected


@pytest.mark.parametrize(("args", "kwargs"), [((5,), {}), ((), {"size": (2,)}), ((1, 2, 3, 4), {}), ((5, 3), {})])
def test_randint_refuses_what_pytorch_refuses(args: tuple, kwargs: dict) -> None:
    with pytest.raises(TypeError):
        random_generator.randint_arguments(args, dict(kwargs))


def test_generator_type_error_is_typed() -> None:
    error = RandomGeneratorTypeError("torch.rand", "no")
    assert isinstance(error, AdaptationError)
    assert isinstance(error, TypeError)
    assert error.op == "torch.rand"


def test_mix_seed_folds_the_counter_in() -> None:
    """RandpermV2 ignores its seed once the offset is non-zero: the counter goes into the seed (31 bits)."""
    seeds = {random_generator.mix_seed(seed, counter) for seed in (1, 2) for counter in (0, 1, 2**30)}
    assert len(seeds) == 6
    assert all(0 <= seed < 2**31 - 1 for seed in seeds)
