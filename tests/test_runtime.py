"""mindspeed_ms.adaptation.runtime: MindSpore runtime settings per device, applied in MindSpore mode only."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import EXAMPLE, msrun_command, subprocess_env

from mindspeed_ms.adaptation.runtime import SETTINGS_ENV, RuntimeSetting, choose_runtime_settings
from mindspeed_ms.adaptation.settings import Settings


def test_cpu_default_is_synchronous_launch_a_quiet_launcher_subnormals_kept_and_quiet_forks() -> None:
    assert choose_runtime_settings("CPU", Settings()) == (RuntimeSetting("launch_blocking", True, "default"),
                                                          RuntimeSetting("quiet_launcher", True, "default"),
                                                          RuntimeSetting("keep_subnormals", True, "default"),
                                                          RuntimeSetting("quiet_fork", True, "default"))


@pytest.mark.parametrize("device", ["Ascend", "GPU"])
def test_other_devices_keep_mindspore_defaults_unless_asked(device: str) -> None:
    assert choose_runtime_settings(device, Settings()) == ()
    assert choose_runtime_settings(device, Settings.from_environ({"MINDSPEED_MS_LAUNCH_BLOCKING": "1"})) == (
        RuntimeSetting("launch_blocking", True, "MINDSPEED_MS_LAUNCH_BLOCKING"),)


def test_environment_overrides_each_setting() -> None:
    env = {"MINDSPEED_MS_LAUNCH_BLOCKING": "off", "MINDSPEED_MS_DISPATCH_THREADS": "2",
           "MINDSPEED_MS_CPU_OP_THREADS": "1", "MINDSPEED_MS_CPU_AFFINITY": "0", "MINDSPEED_MS_QUIET_LAUNCHER": "0",
           "MINDSPEED_MS_KEEP_SUBNORMALS": "off", "MINDSPEED_MS_QUIET_FORK": "0"}
    chosen = {setting.name: setting for setting in choose_runtime_settings("CPU", Settings.from_environ(env))}
    assert set(chosen) == set(SETTINGS_ENV)
    assert chosen["launch_blocking"].value is False
    assert chosen["dispatch_threads"].value == 2
    assert chosen["cpu_op_threads"].value == 1
    assert chosen["cpu_affinity"].value is False
    assert chosen["quiet_launcher"].value is False
    assert chosen["keep_subnormals"].value is False
    assert chosen["quiet_fork"].value is False
    assert chosen["launch_blocking"].describe() == "launch_blocking=off (env)"
    assert chosen["dispatch_threads"].describe() == "dispatch_threads=2 (env)"


def _train(tmp_path: Path, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = subprocess_env(drop=("MINDSPEED_",), bin_first=True, **env)
    log_dir = tmp_path / f"logs_{len(list(tmp_path.iterdir()))}"
    return subprocess.run(msrun_command(EXAMPLE, "--train-iters", "3", *extra, workers=1, log_dir=log_dir),
                          capture_output=True, text=True, timeout=600, env=environ, cwd=str(tmp_path))


def _losses(output: str) -> list[str]:
    return re.findall(r"lm loss (\S+)", output)


def test_mindspore_mode_on_cpu_launches_synchronously_and_losses_do_not_change(tmp_path: Path) -> None:
    default = _train(tmp_path, "--ai-framework", "mindspore")
    assert default.returncode == 0, default.stdout[-3000:] + default.stderr[-3000:]
    assert "runtime: launch_blocking=on" in default.stdout + default.stderr
    asynchronous = _train(tmp_path, "--ai-framework", "mindspore", MINDSPEED_MS_LAUNCH_BLOCKING="0")
    assert asynchronous.returncode == 0, asynchronous.stderr[-3000:]
    assert "runtime: launch_blocking=off (env)" in asynchronous.stdout + asynchronous.stderr
    assert len(_losses(default.stdout)) == 3
    assert _losses(default.stdout) == _losses(asynchronous.stdout)


def test_settings_reach_mindspore_in_mindspore_mode_and_not_in_pytorch_mode(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(
        "import mindspeed_ms.adaptor\n"
        "import sys\n"
        "from mindspeed_ms import MindSporeAdaptation\n"
        "from mindspore._c_expression import RuntimeConf\n"
        "print('settings', MindSporeAdaptation.runtime_settings(), 'blocking', RuntimeConf.get_instance()"
        ".is_launch_blocking())\n")
    env = subprocess_env(drop=("MINDSPEED_",))
    mindspore = subprocess.run([sys.executable, str(script), "--ai-framework", "mindspore"], capture_output=True,
                               text=True, timeout=300, env=env)
    assert mindspore.returncode == 0, mindspore.stderr[-3000:]
    assert "blocking True" in mindspore.stdout
    assert "launch_blocking" in mindspore.stdout
    pytorch = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                             env=dict(env, MINDSPEED_MS_DISABLE="pytorch_cpu"))
    assert pytorch.returncode == 0, pytorch.stderr[-3000:]
    assert "settings None blocking False" in pytorch.stdout
