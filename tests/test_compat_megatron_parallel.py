"""mindspeed_ms.compat.megatron_parallel: the single-process replacements compute what PyTorch computes.

They run under MSAdapter in a subprocess (tests/compat_workers/megatron_parallel_ops.py); the
collective and bucket replacements run on two msrun workers in test_compat_cpu_collectives.py, and
the whole machinery end to end in test_parallel_training.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import json_lines, run_python, subprocess_env

WORKER = Path(__file__).parent / "compat_workers" / "megatron_parallel_ops.py"


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    env = subprocess_env()
    return {case["case"]: case for case in json_lines(run_python(sys.executable, str(WORKER), env=env))}


def test_clone_of_a_0d_loss_is_a_fresh_tensor_autograd_records(results: dict) -> None:
    case = results["clone_0d"]
    assert case["value"] == 4.0
    assert case["fresh"]
    assert case["grad"] == pytest.approx([2.0, 2.0, 2.0])  # d(3 * mean(2w))/dw


def test_clone_of_a_bfloat16_shard_is_an_exact_fresh_bfloat16_copy(results: dict) -> None:
    # Megatron-LM's pretrain_gpt.py --bf16 --use-distributed-optimizer stopped in the parameter all-gather:
    # MindSpore's Identity (deepcopy) has no bfloat16 CPU kernel
    case = results["clone_bf16"]
    assert case.get("values") == case["expected"], case
    assert case["dtype"] == "BFloat16"
    assert case["fresh"]


def test_scatter_takes_a_scalar_value_positionally_and_by_keyword(results: dict) -> None:
    case = results["scatter_scalar"]
    assert case["positional"] == case["expected"]
    assert case["dtype"] == "Int32"
    np.testing.assert_array_equal(case["keyword"], 2.5 * np.array(case["expected"]))


def test_unpermute_sums_each_tokens_weighted_expert_outputs_like_scatter_add(results: dict) -> None:
    case = results["unpermute"]
    np.testing.assert_allclose(case["out"], case["expected"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(case["grad"], case["expected_grad"], rtol=1e-6)


def test_new_empty_accepts_lists_varargs_and_an_accelerator_device(results: dict) -> None:
    case = results["new_empty"]
    assert case["shapes"] == {"list": [3, 4], "tuple": [2, 5], "varargs": [1, 2, 3]}
    assert case["dtype"] == "Int64"


def test_torch_norm_under_sequence_parallel_marks_its_parameters(results: dict) -> None:
    assert results["torch_norm"] == {"case": "torch_norm", "kind": "LayerNorm", "marked": [True, True]}


def test_fp8_quantize_is_a_no_op_without_fp8_params_and_refuses_them(results: dict) -> None:
    assert "Transformer Engine" in results["quantize"]["raised"]


def test_cuda_on_the_cpu_backend_returns_the_tensor_itself(results: dict) -> None:
    assert results["cuda"]["same"]


def test_bucket_sync_in_a_state_megatron_asserts_against_raises_a_typed_error(results: dict) -> None:
    (grad_op, grad_is_runtime, grad_message), (param_op, _, param_message) = results["bucket_state"]["errors"]
    assert (grad_op, grad_is_runtime) == ("start_grad_sync", True)
    assert "already outstanding" in grad_message
    assert param_op == "start_param_sync"
    assert "distributed optimizer" in param_message


def test_empty_like_allocates_on_the_cpu_with_the_inputs_shape_and_dtype(results: dict) -> None:
    assert results["empty_like"]["shape"] == [3, 2]
    assert results["empty_like"]["dtype"] == "Float16"
