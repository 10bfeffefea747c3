"""mindspeed_ms.compat.inplace: in-place ops write through every kind of view, as NumPy/PyTorch do, or fail loudly.

The ops run under MSAdapter in a subprocess (tests/compat_workers/inplace_views.py), which applies each op
through the same view to a MindSpore tensor and to a NumPy array and reports both.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import json_lines, run_python, subprocess_env

WORKER = Path(__file__).parent / "compat_workers" / "inplace_views.py"
VIEWS = ("view", "view_of_view", "narrow", "transpose", "t", "row_slice", "block_slice", "full_slice", "select",
         "narrow_of_transpose", "owner")
OPS = ("zero_", "fill_", "masked_fill_", "add_", "add_same_dtype", "sub_", "mul_", "div_", "exp_", "copy_")


@pytest.fixture(scope="module")
def results() -> dict[Any, dict[str, Any]]:
    cases = json_lines(run_python(sys.executable, str(WORKER), env=subprocess_env()))
    return {case.get("case") or (case["view"], case["op"]): case for case in cases}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("op", OPS)
def test_inplace_op_writes_through_the_view_to_its_base_like_numpy(results: dict, view: str, op: str) -> None:
    case = results[(view, op)]
    assert case["returned_self"], f"{op} on a {view} must return the tensor itself"
    np.testing.assert_allclose(case["view_values"], case["expected_view"], rtol=1e-6)
    np.testing.assert_allclose(case["base"], case["expected_base"], rtol=1e-6)


def test_inplace_op_on_a_view_autograd_records_raises_naming_op_and_call_site(results: dict) -> None:
    case = results["grad_view_raises"]
    error = case["error"]
    assert error is not None, "masked_fill_ on a grad-recorded view returned silently"
    assert error["type"] == "InPlaceOnViewError"
    assert error["is_runtime_error"]
    assert error["op"] == "masked_fill_"
    assert "inplace_views.py" in error["call_site"]
    assert "_grad_cases" in error["call_site"]
    assert "nothing was written" in error["message"]
    np.testing.assert_array_equal(case["scores"], np.full((4, 6), 2.0))  # unchanged: nothing half-applied


def test_inplace_op_on_a_view_without_grad_recording_writes_through(results: dict) -> None:
    expected = np.where((np.arange(24).reshape(4, 6) % 3) == 0, -5.0, 2.0)
    np.testing.assert_array_equal(results["no_grad_view_writes"]["scores"], expected)


def test_inplace_op_on_an_owner_keeps_autograd_exact(results: dict) -> None:
    case = results["grad_owner"]
    masked = (np.arange(24).reshape(4, 6) % 3) == 0
    assert case["returned_self"]
    np.testing.assert_array_equal(case["values"], np.where(masked, -5.0, 2.0))
    # d/dleaf sum((masked_fill(2 * leaf))^2) = 2 * 2 * 2 = 8 where kept, 0 where masked
    np.testing.assert_allclose(case["grad"], np.where(masked, 0.0, 8.0))


def test_scaling_by_one_in_place_launches_no_kernel(results: dict) -> None:
    """``loss *= 1`` / ``loss /= 1`` (megatron's loss scaling): the tensor itself, no new autograd node (no kernel);
    the values and gradients are PyTorch's (tests/conformance/cases/inplace_by_one.py)."""
    case = results["by_one"]
    assert case["returned_self"] == [True] * 4
    assert case["after_one"] == case["before"]
    assert case["after_add"] != case["before"]  # a kernel autograd records does show
    assert case["loss"] == 9.5


def test_add_of_views_of_one_buffer_sums_in_place_and_keeps_the_partial_overlap_refusal(results: dict) -> None:
    case = results["host_add"]
    expected = np.arange(12, dtype=np.float32)
    expected[0:6] *= 2
    expected[6:12] += 0.25
    np.testing.assert_array_equal(case["buffer"], expected)
    assert case["overlap_rule"] == "partial_overlap"


def test_adds_the_host_add_leaves_alone_take_the_general_path(results: dict) -> None:
    """Another dtype, integers, a view of a leaf that requires grad: not summed in host memory (the fast path's
    conditions), each as PyTorch does it."""
    case = results["host_add_fallbacks"]
    mixed = np.arange(6, dtype=np.float32)
    mixed[0:3] = (mixed[0:3].astype(np.float64) + np.array([0.1, 0.2, 0.3])).astype(np.float32)
    np.testing.assert_array_equal(case["mixed"], mixed)
    assert case["integers"] == [0, 1, 9, 11, 13, 5]
    assert case["leaf_view"] == "InPlaceOnViewError"  # PyTorch: RuntimeError, a view of a leaf requiring grad
    assert case["leaf"] == [0.0] * 6


def test_the_view_adder_is_built_by_the_install(results: dict) -> None:
    case = results["view_adder"]
    assert case["accelerated"], "mindspeed_ms.compat._view_add is missing: pip install -e . needs a C compiler"
    assert (case["c_object"], case["py_object"]) == ("ViewAdd", "add_through_view")


def test_the_view_adder_in_c_answers_and_sums_as_the_python_function_bit_for_bit(results: dict) -> None:
    """DDP's add (a contiguous view of a bucket plus a gradient) and every way around it (owners, overlaps, other
    dtypes and shapes, transposes, non-tensors), float32/float64 with subnormals, -0, inf and NaN, float16 and
    int32: the C object returns what add_through_view returns and leaves the same bits."""
    case = results["view_adder"]
    summed = []
    for name, both in case.items():
        if "/" not in name:
            continue
        assert both["c"] == both["python"], name
        if both["c"][0] is True:
            summed.append(name)
    assert {"float32/ddp_view", "float32/offset_slice", "float32/offset_zero_view", "float32/same_memory",
            "float32/long_tail", "float64/ddp_view", "float64/long_tail", "float32/ones_dims"} <= set(summed)
    refused = ("owner", "partial_overlap", "transposed", "transposed_other", "broadcast",
               "other_dims", "other_dtype", "integers", "not_a_tensor", "python_number")
    assert all(case[f"float32/{name}"]["c"][0] in (False, "unbuilt") for name in refused)
    assert not any(name.startswith(("float16/", "int32/")) for name in summed)


def test_tensor_add_is_the_c_front_and_adds_as_its_python_wrapper_bit_for_bit() -> None:
    """DDP's main_grad.add_(grad) goes through the C front (no Python frame); every pair of the view adder's cases
    gives what the Python wrapper behind it gives: the same returned object or exception, the same bits."""
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    case = json_lines(run_python(sys.executable, str(WORKER.parent / "inplace_front.py"), env=env))[-1]
    assert (case["front"], case["dtype"]) == ("InplaceAdd", "Float32")
    pairs = {name: both for name, both in case.items() if "/" in name}
    assert len(pairs) == 4 * 18  # four dtypes, each with the 18 pairs of _view_adder_pairs
    for name, both in pairs.items():
        assert both["front"] == both["slow"], name
    assert pairs["float32/ddp_view"]["front"][0] == "self"
    assert case["alpha"] == [2.0, 2.0, 2.0]
    assert case["bool_alpha"] == [True, True, True]


def test_the_view_adder_leaves_a_view_autograd_records_to_the_general_path(results: dict) -> None:
    assert results["view_adder"]["leaf_view_grad_True"] == {"answers": [False, False], "leaf": [0.0] * 6}
    no_grad = results["view_adder"]["leaf_view_grad_False"]  # both paths decide alike without grad mode too
    assert no_grad["answers"][0] == no_grad["answers"][1]


def test_a_profile_books_mindspores_readers_the_view_adder_calls_to_them_on_both_paths(results: dict) -> None:
    """bench_train counts MindSpore's builtins as theirs: the C object raises their profiler events as Python does."""
    profiled = results["view_adder"]["profiled_reads"]
    assert profiled["True"]["reads"] == {"_data_ptr": 10, "stride": 10}
    assert profiled["True"]["values"] == [0.0] * 6 + [5.0] * 6
    # the Python function may read them twice more: host_array's first look at the two tensors (unless an array of
    # memory freed before is kept at those addresses)
    assert profiled["False"]["values"] == profiled["True"]["values"]
    # the sum has an entry of its own (bench_train books both as host kernels, not as our code)
    assert profiled["True"]["sums"] == {"<built-in method mindspeed_ms.compat._view_add.host_add>": 5}
    assert profiled["False"]["sums"] == {"add": 5}
    assert all(calls in (10, 12) for calls in profiled["False"]["reads"].values())


def test_the_c_sum_adds_buffers_as_numpy_does_and_refuses_what_it_cannot_add() -> None:
    from mindspeed_ms.compat.inplace import compiled_sum

    host_add = compiled_sum()
    assert host_add is not None, "mindspeed_ms.compat._view_add is missing: pip install -e . needs a C compiler"
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        info = np.finfo(dtype)
        edge = np.array([0.0, -0.0, info.tiny, info.tiny / 4, -info.max, info.max, np.inf, -np.inf, np.nan, 1.0],
                        dtype)
        target = np.concatenate([edge, rng.standard_normal(1003).astype(dtype)])
        source = np.concatenate([edge[::-1], rng.standard_normal(1003).astype(dtype)])
        expected = target + source
        with np.errstate(invalid="ignore", over="ignore"):
            host_add(target, source)
        assert target.view(f"u{target.itemsize}").tolist() == expected.view(f"u{expected.itemsize}").tolist()
    same = np.ones(4, np.float32)
    host_add(same, same)  # the same memory: x + x
    assert same.tolist() == [2.0] * 4
    refused = {
        "float16": (np.ones(4, np.float16), np.ones(4, np.float16)),
        "mixed": (np.ones(4, np.float32), np.ones(4, np.float64)),
        "sizes": (np.ones(4, np.float32), np.ones(5, np.float32)),
        "overlap": (np.ones(8, np.float32)[:6], np.ones(8, np.float32)[2:]),
        "read_only": (np.ones(4, np.float32), np.ones(4, np.float32)),
        "strided": (np.ones(8, np.float32)[::2], np.ones(4, np.float32)),
    }
    base = np.ones(8, np.float32)
    refused["overlap"] = (base[:6], base[2:])
    refused["read_only"][0].flags.writeable = False
    errors = {}
    for name, (target, source) in refused.items():
        before = target.copy()
        with pytest.raises((TypeError, ValueError, BufferError)) as caught:
            host_add(target, source)
        errors[name] = caught.type.__name__
        assert np.array_equal(target, before)  # nothing written
    assert errors == {"float16": "TypeError", "mixed": "TypeError", "sizes": "ValueError", "overlap": "ValueError",
                      "read_only": "ValueError", "strided": "ValueError"}
