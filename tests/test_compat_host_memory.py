"""mindspeed_ms.compat.host_memory and host_kernels: NumPy over a tensor's own memory, at its offset and strides,
and the same bits as MindSpore's kernels (tests/compat_workers/host_memory_ops.py, under MSAdapter)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import json_lines, run_python, subprocess_env

WORKER = Path(__file__).parent / "compat_workers" / "host_memory_ops.py"


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    env = subprocess_env(drop=("MINDSPEED_MS_",))
    return {case["case"]: case for case in json_lines(run_python(sys.executable, str(WORKER), env=env))}


def test_writes_through_a_slice_and_a_transposed_row_land_in_the_base(results: dict) -> None:
    expected = np.arange(24, dtype=np.float32).reshape(4, 6)
    expected[1:3] = -1.0
    expected.T[2] = 7.0
    np.testing.assert_array_equal(results["views"]["base"], expected)
    assert results["views"]["flat_size"] == 24


def test_bfloat16_memory_reads_as_its_own_bits(results: dict) -> None:
    case = results["bfloat16"]
    assert case["bits"] == case["expected"]


def test_host_add_and_scale_give_mindspores_kernel_bits(results: dict) -> None:
    case = results["kernels"]
    assert case["add_equal"]
    assert case["scale_equal"]


def test_kept_arrays_are_told_apart_by_shape_strides_and_dtype(results: dict) -> None:
    """host_array keeps its arrays by (address, shape, strides, dtype): the same memory read as a vector, a
    matrix, its transpose and as integers gets four arrays, each right; a kept array still writes through."""
    case = results["kept"]
    assert case["shapes"] == {"flat": [12], "matrix": [3, 4], "transposed": [4, 3], "bits": [12], "again": [12]}
    expected = np.arange(12, dtype=np.float32)
    expected[0] = 100.0
    assert case["base"] == expected.tolist()
    assert case["transposed"] == expected.reshape(3, 4).T.tolist()
    assert case["bits"] == int(np.float32(100.0).view(np.uint32))
    assert case["same_array"]  # the second read of the same memory, shape, strides and dtype: the kept array


def test_the_compiled_host_array_is_built_by_the_install_and_is_the_default(results: dict) -> None:
    case = results["both_paths"]
    assert case["compiled"] == "HostArray", "mindspeed_ms.compat._host_dispatch is missing: pip install -e . needs a " \
                                            "C compiler"
    assert case["default"]


@pytest.mark.parametrize("read", ["plain", "slice", "transposed", "strided row", "flat", "no sync", "as uint32",
                                  "flat int32", "bfloat16", "mindspore tensor", "0-d", "shape list"])
def test_host_array_in_c_hands_out_the_python_functions_arrays(results: dict, read: str) -> None:
    """Both paths read the same memory at the same shape, strides and dtype, and share one kept array per key
    (whichever path reads first: the cases alternate)."""
    assert results["both_paths"]["cases"][read] == {"same": True, "kept": True, "values": True}


def test_host_array_in_c_refuses_what_the_python_function_refuses_with_its_errors(results: dict) -> None:
    errors = results["both_paths"]["errors"]
    assert set(errors) == {"unknown keyword", "positional", "no tensor", "not a tensor"}
    for name, (compiled, python) in errors.items():
        assert compiled == python != "no error", name


def test_a_profile_books_the_readers_host_array_calls_in_c_to_mindspore(results: dict) -> None:
    """MindSpore's address and stride readers and the executor's own sync (a bound method of a builtin), called from
    C, raise the profiler's events as when Python calls them: benchmarks/bench_train.py books them to MindSpore."""
    booked = results["both_paths"]["booked"]
    assert sorted(booked.values()) == [7, 7, 7]
    assert any("_data_ptr" in name for name in booked)
    assert any("stride" in name for name in booked)
    assert "<built-in method mindspore._c_expression.sync>" in booked
