"""mindspeed-ms run: every Python process of a command imports mindspeed_ms.adaptor first, scripts unchanged.

The end-to-end tests start real interpreters (the MindSpore one and the PyTorch reference) and a real 2-worker
msrun on 127.0.0.1 under ``mindspeed-ms run``; none of their scripts imports mindspeed_ms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _helpers import BIN, ROOT, msrun_command, reference_python, subprocess_env

from mindspeed_ms.bootstrap import (
    BOOTSTRAP_ENV,
    STARTUP_DIR,
    CommandNotFoundError,
    RunCommandError,
    bootstrap_environment,
    prepare_launch,
)

HEAVY = ("mindspore", "msadapter", "torch", "megatron", "importlib.metadata", "packaging", "inspect", "logging")

# What a process reports about itself: was the adaptor imported before its own code, which torch, which package.
REPORTER = """
import json, os, sys
seen = {"adapted_first": "mindspeed_ms.adaptor" in sys.modules,
        "heavy": sorted(m for m in sys.modules if m.split(".")[0] in HEAVY or m in HEAVY)}
if "--import-torch" in sys.argv:
    import torch
    seen["torch"] = type(torch.__spec__.loader).__module__.split(".")[0]
    seen["sum"] = float(torch.ones(3).sum())
import mindspeed_ms
seen["package"] = mindspeed_ms.__file__
seen["providers"] = mindspeed_ms.MindSporeAdaptation.providers() is not None
seen["rank"] = os.environ.get("RANK_ID") or os.environ.get("RANK")
print("REPORT " + json.dumps(seen), flush=True)
""".replace("HEAVY", repr(HEAVY))


def _env(**extra: str) -> dict[str, str]:
    return subprocess_env(drop=("MINDSPEED_", "PYTHONPATH"), bin_first=True, **extra)


def _mindspeed_ms(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
                  timeout: float = 300) -> subprocess.CompletedProcess[str]:
    # the launcher runs from this tree (PYTHONPATH), as the `mindspeed-ms` entry point would
    return subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", *args], capture_output=True, text=True,
                          env=dict(env or _env(), PYTHONPATH=str(ROOT)), cwd=cwd, timeout=timeout)


def _reports(text: str) -> list[dict]:
    return [json.loads(line.split("REPORT ", 1)[1]) for line in text.splitlines() if "REPORT {" in line]


@pytest.fixture
def reporter(tmp_path: Path) -> Path:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(REPORTER))
    return script


# -- the environment (no process started) ------------------------------------------------------------

def test_the_startup_folder_goes_first_on_pythonpath_once_and_the_rest_stays() -> None:
    env = bootstrap_environment({"PYTHONPATH": f"/a{os.pathsep}{STARTUP_DIR}{os.pathsep}/b", "X": "1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [STARTUP_DIR, "/a", "/b"]
    assert env["X"] == "1"
    assert env[BOOTSTRAP_ENV] == STARTUP_DIR
    assert "MINDSPEED_AI_FRAMEWORK" not in env
    assert sorted(os.listdir(STARTUP_DIR)) in (["sitecustomize.py"], ["__pycache__", "sitecustomize.py"])


def test_a_framework_given_to_run_goes_to_the_environment_and_an_unknown_one_is_refused() -> None:
    assert bootstrap_environment({}, framework="MindSpore")["MINDSPEED_AI_FRAMEWORK"] == "mindspore"
    with pytest.raises(RunCommandError, match="'pytorch', 'mindspore'") as caught:
        bootstrap_environment({}, framework="jax")
    assert isinstance(caught.value, ValueError)


def test_a_command_is_resolved_on_the_new_path_and_a_missing_one_is_a_typed_error(tmp_path: Path) -> None:
    launch = prepare_launch(["python", "-c", "pass"], {"PATH": str(BIN)})
    assert os.path.samefile(launch.executable, sys.executable)
    assert launch.argv == ("python", "-c", "pass")
    assert launch.to_dict()["environment"]["PYTHONPATH"] == STARTUP_DIR
    with pytest.raises(CommandNotFoundError, match="'no-such-program' not found on PATH") as caught:
        prepare_launch(["no-such-program"], {"PATH": str(tmp_path)})
    assert isinstance(caught.value, FileNotFoundError)
    assert caught.value.command == "no-such-program"
    with pytest.raises(RunCommandError, match="no command given"):
        prepare_launch([], {})


# -- the command line ----------------------------------------------------------------------------------

def test_cli_usage_errors_exit_2_and_a_dry_run_prints_json(tmp_path: Path) -> None:
    assert _mindspeed_ms("run").returncode == 2
    missing = _mindspeed_ms("run", "--", "no-such-program")
    assert missing.returncode == 2
    assert "'no-such-program' not found" in missing.stderr
    dry = _mindspeed_ms("run", "--dry-run", "--json", "--ai-framework", "mindspore", "--", "python", "x.py",
                        "--json")
    assert dry.returncode == 0, dry.stderr
    shown = json.loads(dry.stdout)
    assert shown["argv"] == ["python", "x.py", "--json"]  # after --, every flag is the command's
    assert shown["environment"]["MINDSPEED_AI_FRAMEWORK"] == "mindspore"
    assert shown["environment"]["PYTHONPATH"].split(os.pathsep)[0] == STARTUP_DIR


def test_the_exit_status_and_a_killing_signal_are_the_commands_own() -> None:
    assert _mindspeed_ms("run", "--", "python", "-c", "import sys; sys.exit(7)").returncode == 7
    assert _mindspeed_ms("run", "--", "sh", "-c", "kill -TERM $$").returncode == -15  # the command's own death


# -- real processes --------------------------------------------------------------------------------------

def test_a_plain_script_in_mindspore_mode_gets_msadapters_torch_without_importing_the_adaptor(reporter: Path) -> None:
    done = _mindspeed_ms("run", "--", "python", str(reporter), "--import-torch", "--ai-framework", "mindspore")
    assert done.returncode == 0, done.stderr[-3000:]
    (report,) = _reports(done.stdout)
    assert report["adapted_first"]
    assert report["providers"]
    assert report["torch"] == "msadapter"
    assert report["sum"] == 3.0
    assert Path(report["package"]).parent == ROOT / "mindspeed_ms"  # the launcher's own package
    assert "MindSpore backend" in done.stderr


def test_pytorch_mode_imports_the_adaptor_and_nothing_heavy(reporter: Path, tmp_path: Path) -> None:
    # another mindspeed_ms on the path is not the one loaded: the launcher's is, and nothing else of its venv
    (tmp_path / "shadow" / "mindspeed_ms").mkdir(parents=True)
    (tmp_path / "shadow" / "mindspeed_ms" / "__init__.py").write_text("raise ImportError('the wrong one')\n")
    env = _env(PYTHONPATH=str(tmp_path / "shadow"))
    done = subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", "run", "--", "python", str(reporter)],
                          capture_output=True, text=True, timeout=120,
                          env=dict(env, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path / "shadow")])))
    assert done.returncode == 0, done.stderr
    (report,) = _reports(done.stdout)
    assert report["adapted_first"]
    assert not report["providers"]
    assert report["heavy"] == [], report["heavy"]
    assert Path(report["package"]).parent == ROOT / "mindspeed_ms"


def test_the_reference_interpreter_gets_the_adaptor_and_its_own_real_torch(reporter: Path) -> None:
    env = _env(PATH=os.pathsep.join([str(Path(reference_python()).parent), os.environ.get("PATH", "")]))
    done = _mindspeed_ms("run", "--", reference_python(), str(reporter), "--import-torch", env=env)
    assert done.returncode == 0, done.stderr
    (report,) = _reports(done.stdout)
    assert report["adapted_first"]
    assert report["torch"] != "msadapter"
    assert report["sum"] == 3.0


def test_a_launcher_is_left_alone_and_a_hidden_sitecustomize_still_runs_after_the_adaptor(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(
        "import sys\nprint('USER_SITECUSTOMIZE adaptor_before=%s' % ('mindspeed_ms.adaptor' in sys.modules))\n")
    launcher = tmp_path / "msrun"  # named like msrun's entry point: a launcher
    launcher.write_text("import sys\nprint('LAUNCHER adapted=%s' % ('mindspeed_ms.adaptor' in sys.modules))\n")
    env = _env(PYTHONPATH=str(tmp_path / "site"))
    done = subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", "run", "--", "sh", "-c",
                           f"python -c pass; python {launcher} --ai-framework mindspore"],
                          capture_output=True, text=True, timeout=120,
                          env=dict(env, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path / "site")])))
    assert done.returncode == 0, done.stderr
    # (the first line is the launcher's own interpreter, which has that folder on its path too)
    assert done.stdout.splitlines()[1:] == ["USER_SITECUSTOMIZE adaptor_before=True",
                                        "USER_SITECUSTOMIZE adaptor_before=False", "LAUNCHER adapted=False"]


def test_a_failing_adaptor_stops_the_process_with_status_1_and_says_why(reporter: Path) -> None:
    done = _mindspeed_ms("run", "--", "python", str(reporter), "--ai-framework", "jax")
    assert done.returncode == 1
    assert "REPORT" not in done.stdout
    assert "FrameworkError" in done.stderr
    assert "invalid AI framework 'jax'" in done.stderr


def test_msrun_workers_are_each_adapted(reporter: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    done = _mindspeed_ms("run", "--", *msrun_command(reporter, "--import-torch", "--ai-framework", "mindspore",
                                                     workers=2, log_dir=logs), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    reports = {report["rank"]: report for name in ("worker_0.log", "worker_1.log")
               for report in _reports((logs / name).read_text())}
    assert sorted(reports) == ["0", "1"]
    for report in reports.values():
        assert report["adapted_first"]
        assert report["providers"]
        assert report["torch"] == "msadapter"


def test_multiprocessings_resource_tracker_is_left_alone_and_the_script_is_adapted(tmp_path: Path) -> None:
    # a hidden sitecustomize runs after ours in every process: it says whether the adaptor came first, and who it is
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(
        "import sys\nwho = 'TRACKER' if 'resource_tracker' in ' '.join(sys.orig_argv) else 'SCRIPT'\n"
        "print('%s adaptor_before=%s' % (who, 'mindspeed_ms.adaptor' in sys.modules), flush=True)\n")
    script = tmp_path / "tracked.py"
    script.write_text("from multiprocessing import resource_tracker\nresource_tracker.ensure_running()\n"
                      "print('TRACKER_PID', resource_tracker._resource_tracker._pid, flush=True)\n")
    env = _env(PYTHONPATH=str(tmp_path / "site"))
    done = subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", "run", "--ai-framework", "mindspore", "--",
                           "python", str(script)], capture_output=True, text=True, timeout=300,
                          env=dict(env, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path / "site")])))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "SCRIPT adaptor_before=True" in lines  # the script itself: MindSpore mode, adapted first
    assert any(line.startswith("TRACKER_PID ") and line.split()[1].isdigit() for line in lines)
    assert "TRACKER adaptor_before=False" in lines  # the tracker started, and ran without the adaptor
    assert "TRACKER adaptor_before=True" not in lines
