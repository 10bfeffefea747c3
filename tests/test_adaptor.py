"""``import mindspeed_ms.adaptor`` in fresh interpreters: the framework switch, providers, logging, tracing.

Each test runs a small training-script stand-in in a subprocess, so that ``sys.modules``,
``sys.argv`` and the import system are those of a real entrypoint. A downstream provider comes
from a distribution whose ``.dist-info`` is put on ``PYTHONPATH``; the built-in providers are
disabled except in the test that checks them, so these tests do not depend on the patch set.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _helpers import builtin_providers, subprocess_env

from mindspeed_ms.testing import write_distribution

BUILTIN = builtin_providers()

PROVIDER = """
import os

name = "downstream"
requires = ["megatron-core>=0.12"]

def register(registry, args):
    counter = os.environ.get("DOWNSTREAM_COUNTER")
    if counter:
        with open(counter, "a") as handle:
            handle.write("x")
    registry.register("ms_demo_target.compute", compute, purpose="demo replacement")
    if getattr(args, "use_fast_path", False):
        registry.register("ms_demo_target.fast", fast)
    if os.environ.get("DOWNSTREAM_FAIL"):
        raise RuntimeError("downstream provider broke")

def compute(x):
    return ["patched", x]

def fast():
    return "fast-patched"
"""

TARGET = """
def compute(x):
    return ["original", x]

def fast():
    return "fast-original"
"""

REPORT = """
import json, sys
import ms_demo_target
from mindspeed_ms.adaptor import MindSporeAdaptation
torch = sys.modules.get("torch")
loader = getattr(getattr(torch, "__spec__", None), "loader", None)
print(json.dumps({
    "compute": ms_demo_target.compute(1), "fast": ms_demo_target.fast(),
    "torch_from": type(loader).__module__ if torch is not None else None,
    "loaded": sorted({m.split(".")[0] for m in sys.modules} & {"msadapter", "mindspore", "torch", "megatron",
                                                                "importlib_metadata", "packaging", "inspect"}),
    "importlib.metadata": "importlib.metadata" in sys.modules,
    "states": {s.target: s.state for s in MindSporeAdaptation.status()},
    "calls": {s.target: s.calls for s in MindSporeAdaptation.status()},
}))
"""


@pytest.fixture()
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    write_distribution(root, "ms-downstream", modules={"ms_downstream_provider.py": PROVIDER,
                                                       "ms_demo_target.py": TARGET},
                       entry_points={"downstream": "ms_downstream_provider"})
    return root


def _run(site: Path, script: str, *args: str, builtin: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    environ = subprocess_env(drop=("MINDSPEED_", "RANK", "PYTHONPATH"), PYTHONPATH=str(site))
    if not builtin and BUILTIN:
        environ["MINDSPEED_MS_DISABLE"] = ",".join(BUILTIN)
    environ.update(env)
    path = site.parent / "train.py"
    path.write_text(textwrap.dedent(script))
    return subprocess.run([sys.executable, str(path), *args], cwd=str(site.parent), env=environ,
                          capture_output=True, text=True, timeout=300, check=False)


def _report(completed: subprocess.CompletedProcess[str]) -> dict:
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_pytorch_mode_imports_nothing_heavy_and_patches_nothing(site: Path) -> None:
    report = _report(_run(site, "import mindspeed_ms.adaptor\n" + REPORT, "--num-layers", "2"))
    assert report["compute"] == ["original", 1]
    assert report["loaded"] == []
    assert report["importlib.metadata"] is False
    assert report["states"] == {}


@pytest.mark.parametrize("flag", [["--ai-framework", "mindspore"], ["--ai-framework=mindspore"]])
def test_flag_switches_to_mindspore_and_applies_downstream_patches(site: Path, flag: list[str]) -> None:
    completed = _run(site, "import mindspeed_ms.adaptor\nimport torch\n" + REPORT, "--lr", "0.1", *flag)
    report = _report(completed)
    assert report["compute"] == ["patched", 1]
    assert report["fast"] == "fast-original"
    assert report["torch_from"].startswith("msadapter")
    assert report["states"] == {"ms_demo_target.compute": "applied"}
    # The target is imported after the adaptor: the summary counts it as waiting, then the hook applies it.
    assert "mindspeed_ms: MindSpore backend, 0 patches applied, 1 waiting for import" in completed.stderr
    assert completed.stderr.count("mindspeed_ms: MindSpore backend") == 1


def test_environment_variable_switches_to_mindspore(site: Path) -> None:
    report = _report(_run(site, "import mindspeed_ms.adaptor\n" + REPORT, MINDSPEED_AI_FRAMEWORK="mindspore"))
    assert report["compute"] == ["patched", 1]


def test_invalid_framework_fails_the_import_listing_the_choices(site: Path) -> None:
    completed = _run(site, "import mindspeed_ms.adaptor\n", "--ai-framework", "mindspor")
    assert completed.returncode != 0
    assert "FrameworkError" in completed.stderr
    assert "'mindspor'" in completed.stderr
    assert "'pytorch', 'mindspore'" in completed.stderr


def test_missing_msadapter_is_an_import_error_saying_how_to_install(site: Path) -> None:
    script = "import sys\nsys.modules['msadapter'] = None  # as if not installed\nimport mindspeed_ms.adaptor\n"
    completed = _run(site, script, "--ai-framework", "mindspore")
    assert completed.returncode != 0
    assert "BackendNotInstalledError: MindSpore mode (--ai-framework mindspore) needs MSAdapter" in completed.stderr
    assert "pip install msadapter" in completed.stderr


def test_torch_imported_first_is_an_error(site: Path) -> None:
    # Real PyTorch cannot be installed next to MSAdapter: a stand-in package named torch plays it.
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text('__version__ = "2.1.0+cpu"\n')
    completed = _run(site, "import torch\nimport mindspeed_ms.adaptor\n", "--ai-framework", "mindspore")
    assert completed.returncode != 0
    assert "was imported before mindspeed_ms.adaptor" in completed.stderr
    assert "must be the first import" in completed.stderr


def test_repeated_imports_and_execute_change_nothing(site: Path, tmp_path: Path) -> None:
    counter = tmp_path / "counter.txt"
    script = textwrap.dedent("""
        import importlib, sys
        import mindspeed_ms.adaptor
        first = mindspeed_ms.adaptor.MindSporeAdaptation.execute()
        importlib.reload(mindspeed_ms.adaptor)
        del sys.modules["mindspeed_ms.adaptor"]
        import mindspeed_ms.adaptor
        assert mindspeed_ms.adaptor.MindSporeAdaptation.execute() is first
    """) + REPORT
    completed = _run(site, script, "--ai-framework", "mindspore", DOWNSTREAM_COUNTER=str(counter))
    assert _report(completed)["compute"] == ["patched", 1]
    assert counter.read_text() == "x"  # the provider registered once
    assert completed.stderr.count("MindSpore backend") == 1


def test_disabled_downstream_provider_is_not_imported(site: Path) -> None:
    script = "import mindspeed_ms.adaptor, sys\nassert 'ms_downstream_provider' not in sys.modules\n" + REPORT
    completed = _run(site, script, "--ai-framework", "mindspore",
                     MINDSPEED_MS_DISABLE=",".join([*BUILTIN, "downstream"]))
    report = _report(completed)
    assert report["compute"] == ["original", 1]
    assert report["states"] == {}
    assert "MindSpore backend, 0 patches applied; providers skipped: " in completed.stderr
    assert "downstream (disabled by MINDSPEED_MS_DISABLE)" in completed.stderr


def test_provider_args_come_from_argv_and_repatch(site: Path) -> None:
    script = """
        import types
        import mindspeed_ms.adaptor
        from mindspeed_ms.adaptor import MindSporeAdaptation
        import ms_demo_target
        before = ms_demo_target.fast()
        MindSporeAdaptation.repatch(types.SimpleNamespace(ai_framework="mindspore", use_fast_path=False))
        print(before, ms_demo_target.fast(), ms_demo_target.compute(2))
    """
    completed = _run(site, script, "--ai-framework", "mindspore", "--use-fast-path")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["fast-patched", "fast-original", "['patched',", "2]"]


def test_failing_provider_stops_execute_naming_it(site: Path) -> None:
    completed = _run(site, "import mindspeed_ms.adaptor\n", "--ai-framework", "mindspore", DOWNSTREAM_FAIL="1")
    assert completed.returncode != 0
    assert "ProviderError: provider 'downstream'" in completed.stderr
    assert "downstream provider broke" in completed.stderr
    assert "withdrawn" in completed.stderr


def test_summary_only_on_rank_zero_and_debug_lists_patches(site: Path) -> None:
    script = "import mindspeed_ms.adaptor\n"
    other_rank = _run(site, script, "--ai-framework", "mindspore", RANK_ID="1", RANK="0")
    assert other_rank.returncode == 0
    assert "MindSpore backend" not in other_rank.stderr
    debug = _run(site, script, "--ai-framework", "mindspore", MINDSPEED_MS_LOG_LEVEL="DEBUG")
    assert "DEBUG: ms_demo_target.compute: pending-import -> ms_downstream_provider.compute [downstream]" in (
        debug.stderr)
    assert debug.stdout == ""


def test_call_tracing_reports_calls_at_exit(site: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    script = "import mindspeed_ms.adaptor\nimport ms_demo_target\nms_demo_target.compute(1)\n" + REPORT
    completed = _run(site, script, "--ai-framework", "mindspore", MINDSPEED_MS_TRACE="1",
                     MINDSPEED_MS_TRACE_FILE=str(trace))
    assert _report(completed)["calls"] == {"ms_demo_target.compute": 2}
    data = json.loads(trace.read_text())
    assert [(item["target"], item["calls"]) for item in data["called"]] == [("ms_demo_target.compute", 2)]
    assert data["called"][0]["provider"] == "downstream"


def test_builtin_providers_load_and_apply_in_a_fresh_interpreter(site: Path) -> None:
    script = "import mindspeed_ms.adaptor\n" + REPORT
    completed = _run(site, script, "--ai-framework", "mindspore", builtin=True)
    report = _report(completed)
    assert report["compute"] == ["patched", 1]
    assert "mindspeed_ms: MindSpore backend" in completed.stderr
    assert "failed" not in {state for state in report["states"].values()}
    builtin = {target: state for target, state in report["states"].items() if not target.startswith("ms_demo")}
    # the built-in set really went in (blocks in force, patches applied or armed), not only skipped
    assert builtin.get("apex") == builtin.get("transformer_engine") == "applied"
    live = [target for target, state in builtin.items() if state in ("applied", "pending-import")]
    assert len(live) > len(builtin) // 2, builtin
