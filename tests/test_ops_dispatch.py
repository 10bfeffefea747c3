"""mindspeed_ms.ops dispatch: one decision per device, visible, forceable to the composite."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from mindspore import Tensor

from mindspeed_ms import device, ops
from mindspeed_ms.ops import COMPOSITE_ENV_VAR, OP_NAMES, clear_dispatch_cache, dispatch_path, force_composite


@pytest.fixture
def pretend_ascend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The device override is the real mechanism patch providers use; no kernel is called here.
    monkeypatch.setenv(device.DEVICE_ENV_VAR, "Ascend")
    device.clear_device_cache()
    clear_dispatch_cache()
    yield
    monkeypatch.delenv(device.DEVICE_ENV_VAR)
    device.clear_device_cache()
    clear_dispatch_cache()


def test_every_op_takes_the_composite_on_cpu() -> None:
    assert {dispatch_path(op) for op in OP_NAMES} == {"composite"}


def test_on_ascend_ops_with_mindspore_kernels_take_the_fused_path(pretend_ascend: None) -> None:
    paths = {op: dispatch_path(op) for op in OP_NAMES}
    fused = {
        "rms_norm",
        "swiglu",
        "rotary_position_embedding",
        "fusion_attention",
        "gmm",
        "moe_token_permute",
        "moe_token_unpermute",
        "all_gather_matmul",
        "all_gather_matmul_v2",
        "matmul_reduce_scatter",
    }
    assert {op for op, path in paths.items() if path == "fused"} == fused
    assert paths["matmul_add_fp32"] == paths["matmul_all_reduce"] == paths["pure_matmul"] == "composite"


def test_force_composite_overrides_the_device_decision_and_nests(pretend_ascend: None) -> None:
    with force_composite():
        with force_composite():
            assert dispatch_path("rms_norm") == "composite"
        assert dispatch_path("rms_norm") == "composite"
    assert dispatch_path("rms_norm") == "fused"


def test_the_environment_variable_forces_the_composite(pretend_ascend: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(COMPOSITE_ENV_VAR, "1")
    assert dispatch_path("fusion_attention") == "composite"


@pytest.mark.parametrize("value", ["false", "off", "0", ""])
def test_the_environment_variable_set_off_leaves_the_device_decision(
        pretend_ascend: None, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(COMPOSITE_ENV_VAR, value)
    assert dispatch_path("fusion_attention") == "fused"


def test_a_malformed_environment_variable_is_a_setting_error_naming_it(
        pretend_ascend: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from mindspeed_ms.errors import SettingError

    monkeypatch.setenv(COMPOSITE_ENV_VAR, "flase")
    with pytest.raises(SettingError, match=COMPOSITE_ENV_VAR):
        dispatch_path("fusion_attention")


def test_forced_composite_runs_on_a_pretend_ascend_without_touching_fused_kernels(pretend_ascend: None) -> None:
    x = Tensor(np.ones((2, 4), np.float32))
    with force_composite():
        y, rstd = ops.npu_rms_norm(x, Tensor(np.ones(4, np.float32)))
    np.testing.assert_allclose(y.asnumpy(), np.ones((2, 4)), rtol=1e-5)


def test_unknown_op_names_list_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown op 'rmsnorm'.*rms_norm"):
        dispatch_path("rmsnorm")


def test_fused_paths_call_mindspore_kernels_with_arguments_mindspore_accepts() -> None:
    # A pretend Ascend on this CPU build: each fused call must fail only for lack of a kernel.
    script = Path(__file__).parent / "ops_workers" / "fused_dispatch_check.py"
    env = dict(os.environ, **{device.DEVICE_ENV_VAR: "Ascend"})
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    report = f"{proc.stdout}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, report
    assert "ALL REACHED" in proc.stdout, report
    assert proc.stdout.count("reached kernel") == 7, report
