"""mindspeed_ms.compat.random_state: get/set of the random state replay MindSpore's CPU stream as PyTorch's do.

One script runs megatron-core's RNG tracker, its activation-recompute state save/restore and torch's state
functions on both backends (MindSpore + MSAdapter with the built-in patches; the PyTorch reference with the
``pytorch_cpu`` provider) and prints facts that do not depend on the generator's algorithm: they must agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from _helpers import ROOT, reference_python

FACTS = """
import json
import mindspeed_ms.adaptor  # noqa: F401
import torch
from megatron.core.tensor_parallel import random as mpu_random

def same(a, b):
    return bool(torch.equal(a, b))

def drop(n=32):
    return torch.nn.functional.dropout(torch.ones(n), 0.5, True)

facts = {}
torch.manual_seed(1234)
tracker = mpu_random.get_cuda_rng_tracker()  # the one activation recompute saves
tracker.add("model-parallel-rng", 1234 + 2718)
tracker.add("other-rng", 99)
torch.manual_seed(1234)
expected_outside = [torch.rand(4), drop()]
torch.manual_seed(1234)
with tracker.fork():
    first_inside = drop()
with tracker.fork():
    second_inside = drop()
with tracker.fork("other-rng"):
    other_inside = drop()
facts["outside_untouched_by_forks"] = same(torch.rand(4), expected_outside[0]) and same(drop(), expected_outside[1])
facts["fork_continues_its_stream"] = not same(first_inside, second_inside)
facts["named_states_differ"] = not same(first_inside, other_inside)

replay = mpu_random.CudaRNGStatesTracker()
replay.add("model-parallel-rng", 1234 + 2718)
with replay.fork():
    facts["same_seed_same_stream"] = same(drop(), first_inside) and same(drop(), second_inside)

saved = tracker.get_states()
with tracker.fork():
    after_save = drop()
tracker.set_states(saved)
with tracker.fork():
    facts["tracker_states_restore"] = same(drop(), after_save)

torch.manual_seed(5)
states = mpu_random._get_all_rng_states()
with tracker.fork():
    recorded = [drop(), torch.rand(3)]
plain = torch.randn(3)
mpu_random._set_all_rng_states(*states)
with tracker.fork():
    facts["recompute_replays_forked"] = same(drop(), recorded[0]) and same(torch.rand(3), recorded[1])
facts["recompute_replays_plain"] = same(torch.randn(3), plain)

with mpu_random._fork_rng():
    torch.rand(8)
facts["fork_rng_context_restores"] = True

torch.manual_seed(8)
state = torch.get_rng_state()
drawn = [torch.randint(0, 100, (5,)), torch.nn.init.normal_(torch.empty(3, 3), std=0.02)]
torch.set_rng_state(state)
facts["state_replays_init"] = same(torch.randint(0, 100, (5,)), drawn[0]) and same(
    torch.nn.init.normal_(torch.empty(3, 3), std=0.02), drawn[1])
facts["state_is_uint8"] = state.dtype == torch.uint8 and state.dim() == 1
print(json.dumps(facts))
"""


def _facts(python: str, framework: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDSPEED_")}
    env.update(PYTHONPATH=str(ROOT), MINDSPEED_AI_FRAMEWORK=framework, GLOG_v="3")
    done = subprocess.run([python, "-c", textwrap.dedent(FACTS)], capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_tracker_recompute_and_state_facts_match_pytorch() -> None:
    ours = _facts(sys.executable, "mindspore")
    reference = _facts(reference_python(), "pytorch")
    assert ours == reference
    assert all(reference.values()), reference


DEVICE = """
import json
import numpy as np
import mindspeed_ms.adaptor  # noqa: F401
import torch
from mindspeed_ms.compat.random_state import STATE_BYTES, RandomStateError

result = {}
torch.manual_seed(3)
cpu = torch.get_rng_state()
device = torch.cuda.get_rng_state()
result["one_stream"] = bool(torch.equal(cpu, device)) and tuple(cpu.shape) == (STATE_BYTES,)
first = torch.rand(4)
torch.cuda.set_rng_state(device)
result["cuda_set_replays"] = bool(torch.equal(torch.rand(4), first))
np.random.seed(0)
numpy_state = np.random.get_state()[1].copy()
torch.cuda.manual_seed(42)
seeded = torch.randn(3)
torch.cuda.manual_seed_all(42)
result["cuda_seed_replays"] = bool(torch.equal(torch.randn(3), seeded))
result["cuda_seed_leaves_numpy"] = bool((np.random.get_state()[1] == numpy_state).all())
with torch.random.fork_rng():
    torch.rand(5)
result["fork_rng_all_devices"] = True
from mindspeed_ms.compat import random_state
# the RNG tracker's fork keeps its outside state as bytes where torch's state functions are these
result["fork_takes_the_bytes_path"] = (torch.get_rng_state is random_state.get_rng_state
                                       and torch.set_rng_state is random_state.set_rng_state)
torch.manual_seed(11)
torch.nn.functional.dropout(torch.ones(16), 0.5, True)  # a kernel counter moved: carried in the state
captured = random_state.capture()
result["capture_is_the_state"] = captured == bytes(torch.get_rng_state().numpy().tobytes())
drawn = [torch.rand(4), torch.nn.functional.dropout(torch.ones(16), 0.5, True)]
random_state.restore(captured)
result["restore_replays"] = bool(torch.equal(torch.rand(4), drawn[0])) and bool(
    torch.equal(torch.nn.functional.dropout(torch.ones(16), 0.5, True), drawn[1]))
errors = {}
for name, state in (("pytorch_size", torch.zeros(5056, dtype=torch.uint8)), ("float", torch.zeros(STATE_BYTES)),
                    ("bad_header", torch.zeros(STATE_BYTES, dtype=torch.uint8))):
    before = torch.get_rng_state()
    try:
        torch.set_rng_state(state)
    except RandomStateError as error:
        errors[name] = [error.reason, isinstance(error, RuntimeError), bool(torch.equal(before, torch.get_rng_state()))]
        if name == "pytorch_size":  # a Megatron checkpoint of the other backend: the message names the way out
            result["says_no_load_rng"] = "--no-load-rng" in str(error)
result["errors"] = errors
print(json.dumps(result))
"""


def test_device_state_is_the_cpu_stream_and_bad_states_raise_typed_errors() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDSPEED_")}
    env.update(PYTHONPATH=str(ROOT), MINDSPEED_AI_FRAMEWORK="mindspore", GLOG_v="3")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(DEVICE)], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result.pop("errors") == {"pytorch_size": ["size", True, True], "float": ["dtype", True, True],
                                    "bad_header": ["format", True, True]}
    assert all(result.values()), result


def test_more_moved_kernels_than_slots_is_a_typed_error() -> None:
    import importlib

    from mindspeed_ms.compat import random_state

    seeds = importlib.import_module("mindspore.common.seed")
    saved = (seeds._GLOBAL_SEED, dict(seeds._KERNEL_SEED))
    try:
        seeds._GLOBAL_SEED = 1
        for index in range(40):
            seeds._KERNEL_SEED[(f"kernel{index}", 0)] = 7
        with pytest.raises(random_state.RandomStateError) as raised:
            random_state.get_rng_state()
        assert raised.value.reason == "slots"
    finally:
        seeds._GLOBAL_SEED = saved[0]
        seeds._KERNEL_SEED.clear()
        seeds._KERNEL_SEED.update(saved[1])


def test_state_restores_counters_of_kernels_known_by_name_only() -> None:
    """A state restores in a process where the kernel has not drawn yet (a checkpoint resumed)."""
    import importlib

    from mindspeed_ms.compat import random_state

    seeds = importlib.import_module("mindspore.common.seed")
    saved = (seeds._GLOBAL_SEED, dict(seeds._KERNEL_SEED))
    try:
        seeds._GLOBAL_SEED = 77
        seeds._KERNEL_SEED.clear()
        seeds._KERNEL_SEED[("dropout", 0)] = 3 * 12345
        state = random_state.get_rng_state()
        seeds._KERNEL_SEED.clear()
        seeds._GLOBAL_SEED = None
        random_state.set_rng_state(state)
        assert seeds._GLOBAL_SEED == 77
        assert seeds._KERNEL_SEED == {("dropout", 0): 3 * 12345}
        seeds._KERNEL_SEED[("unknown-kernel", 0)] = 5
        state = random_state.get_rng_state()
        seeds._KERNEL_SEED.clear()
        with pytest.raises(random_state.RandomStateError) as raised:
            random_state.set_rng_state(state)
        assert raised.value.reason == "kernel"
        assert seeds._KERNEL_SEED == {}  # nothing changed
    finally:
        seeds._GLOBAL_SEED = saved[0]
        seeds._KERNEL_SEED.clear()
        seeds._KERNEL_SEED.update(saved[1])
