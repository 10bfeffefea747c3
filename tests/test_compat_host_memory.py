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
