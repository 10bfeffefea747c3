"""mindspeed_ms.device: lazy, cached device target with an environment override."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from mindspeed_ms import device


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    device.clear_device_cache()
    yield
    device.clear_device_cache()


def test_device_target_reads_mindspore_context_on_this_cpu_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(device.DEVICE_ENV_VAR, raising=False)
    assert device.device_target() == "CPU"
    assert device.is_ascend() is False


def test_environment_override_is_normalised_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(device.DEVICE_ENV_VAR, "npu")
    assert device.device_target() == "Ascend"
    assert device.is_ascend()
    monkeypatch.setenv(device.DEVICE_ENV_VAR, "gpu")
    assert device.device_target() == "Ascend"  # cached until cleared
    device.clear_device_cache()
    assert device.device_target() == "GPU"


def test_unknown_override_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(device.DEVICE_ENV_VAR, "tpu")
    with pytest.raises(ValueError, match="'tpu'.*MINDSPEED_MS_DEVICE"):
        device.device_target()


def test_importing_the_module_does_not_import_mindspore() -> None:
    code = "import sys, mindspeed_ms.device; print('mindspore' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
