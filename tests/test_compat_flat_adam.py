"""mindspeed_ms.compat.flat_adam: a whole DDP bucket updated at once equals the per-parameter update bit for bit.

The per-parameter update is checked against PyTorch's rule in test_compat_optim.py; here the flat path
(two parameter groups with different weight decay over one bucket) runs beside it on the same
gradients (tests/compat_workers/flat_adam_ops.py): parameters and state after 4 steps, then after a
state dict saved by the per-parameter run is loaded into the flat one and both take 2 more steps.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from _helpers import json_lines, run_python, subprocess_env

WORKER = Path(__file__).parent / "compat_workers" / "flat_adam_ops.py"
#: the whole bucket in one C call (host_kernels.adam_bucket), and flat_adam's chunk loop (``*_chunk_loop``)
CASES = ["adamw", "adamw_amsgrad_maximize", "adam_decoupled", "adamw_chunk_loop", "adamw_amsgrad_maximize_chunk_loop"]


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    return {case["case"]: case for case in json_lines(run_python(sys.executable, str(WORKER), env=env))}


@pytest.mark.parametrize("name", CASES)
def test_bucket_update_equals_the_per_parameter_update_bit_for_bit(results: dict, name: str) -> None:
    case = results[name]
    assert case["used_flat"]
    assert case["flat"]["params"] == case["ref"]["params"]
    assert case["flat"]["state"] == case["ref"]["state"]  # per-parameter views of the flat moments, own steps


@pytest.mark.parametrize("name", CASES)
def test_a_loaded_state_dict_replaces_the_flat_moments(results: dict, name: str) -> None:
    case = results[name]
    assert case["resumed"] == case["resumed_ref"]
    assert case["state_dict_steps"] == [6.0] * 4  # one per parameter (compat_workers/flat_adam_ops.py SHAPES)


def test_l2_weight_decay_keeps_the_per_parameter_path(results: dict) -> None:
    case = results["adam_l2"]
    assert not case["used_flat"]
    assert case["flat"] == case["ref"]
    assert case["resumed"] == case["resumed_ref"]


def test_moved_memory_new_step_counters_and_a_foreign_gradient_are_seen(results: dict) -> None:
    """The layout, host arrays and step counters kept between steps are checked each step, not trusted."""
    case = results["moved"]
    assert case["flat"]["params"] == case["ref"]["params"]  # the moved parameter updated in its new memory
    assert case["flat"]["state"] == case["ref"]["state"]  # counters read from the new step tensors
    assert case["used"][2] is True  # the layout was rebuilt when the parameter's memory moved
    assert case["used"][4] is False  # a gradient outside the bucket: no flat layout that step
    assert case["used"][5] is True
