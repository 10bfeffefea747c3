"""mindspeed_ms.compat.megatron_speed: fewer kernels, the same numbers as megatron's code on PyTorch.

The replacements run under MSAdapter with megatron-core in a subprocess
(tests/compat_workers/megatron_speed_ops.py); the whole step against real PyTorch is
test_parity.py's, the data-parallel bucket sync test_parallel_training.py's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import json_lines, run_python, subprocess_env

WORKER = Path(__file__).parent / "compat_workers" / "megatron_speed_ops.py"


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    return {case["case"]: case for case in json_lines(run_python(sys.executable, str(WORKER), env=env))}


def test_scaling_a_view_in_place_reaches_the_base_with_mindspores_float32_product(results: dict) -> None:
    case = results["scale_view"]
    assert case["base"] == case["expected"]  # bit for bit, the elements outside the view untouched
    assert case["same_as_mindspore_mul"]


def test_gradients_that_tile_a_bucket_are_normed_as_the_bucket(results: dict) -> None:
    case = results["grad_norm"]
    assert case["whole"] == [10]
    assert case["whole_is_buffer"]
    assert case["norm"] == pytest.approx(case["expected_norm"], rel=1e-6)


def test_a_partly_counted_bucket_or_a_foreign_gradient_keeps_megatrons_list(results: dict) -> None:
    case = results["grad_norm"]
    assert case["partial"] == [6]  # the shared parameter stays out, as in megatron's filter
    assert case["loose"] == [6, 4]
    assert case["without_main_grad"] == [6, 4]


def test_clipping_scales_bucket_and_loose_gradients_by_megatrons_coefficient(results: dict) -> None:
    case = results["clip"]
    assert case["bucket"] == case["expected"]
    assert case["own"] == case["own_expected"]
    assert case["below_max"] == case["values"]  # coefficient >= 1: nothing scaled


def test_clipping_a_non_float32_gradient_raises_a_typed_error(results: dict) -> None:
    case = results["clip_dtype"]
    assert case["raised"] == "ClipGradTypeError"
    assert "float32" in case["message"]


def test_chained_step_counts_zeros_only_when_asked(results: dict) -> None:
    off, on = results["chained_off"], results["chained_on"]
    assert off["result"] == [True, 4.0, None]
    assert "count_zeros" not in off["calls"]
    assert on["result"] == [True, 4.0, 7]
    assert on["calls"] == ["prepare_grads", "get_grad_norm", "count_zeros", "step_with_ready_grads"]


def test_chained_step_stops_on_inf_before_the_norm(results: dict) -> None:
    assert results["chained_inf"] == {"case": "chained_inf", "result": [False, None, None], "calls": ["prepare_grads"]}


def test_chained_step_clips_every_optimizer_but_stubs(results: dict) -> None:
    case = results["chained_clip"]
    assert case["stub"] == case["values"]
    np.testing.assert_array_equal(case["clipped"], case["expected"])


def test_a_parameter_without_a_gradient_is_left_out_of_norm_and_clipping(results: dict) -> None:
    """The loop's path (one parameter has no gradient) next to the map path (all have one): the same lists."""
    assert results["grad_norm_without_a_grad"]["sizes"] == [10]  # the bucket, whole; the gradless one left out
    case = results["clip_without_a_grad"]
    assert case["extra_grad"]
    np.testing.assert_array_equal(np.asarray(case["bucket"], np.float32),
                                  np.asarray(results["clip"]["expected"], np.float32))
