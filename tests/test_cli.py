"""Tests of the ``mindspeed-ms`` command: ``patches`` and ``verify [--static]``, exit codes, ``--json``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from _helpers import builtin_providers, subprocess_env

from mindspeed_ms.cli import main
from mindspeed_ms.testing import write_distribution

BUILTIN = builtin_providers()

MEGATRON_PROVIDER = """
name = "megatron-demo"

def register(registry, args):
    registry.block("transformer_engine")  # msadapter's shim makes megatron believe TE works
    registry.register("megatron.core.tensor_parallel.random._set_cuda_rng_state", set_rng_state,
                      purpose="no CUDA generator on MindSpore")
    registry.register("megatron.core.tensor_parallel.layers.ColumnParallelLinear.forward", column_forward)
    registry.register("megatron.core.tensor_parallel.random._set_cuda_rng_stat", set_rng_state)
    if getattr(args, "narrow", False):
        registry.register("megatron.core.tensor_parallel.random.model_parallel_cuda_manual_seed", narrow_seed)

def set_rng_state(new_state, device=-1, graph_safe=False):
    return None

def column_forward(self, input_, weight=None, runtime_gather_output=None):
    return input_

def narrow_seed(seed):
    return None
"""


@pytest.fixture()
def downstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A distribution providing patches for a throwaway module; builtins disabled."""
    target = f"cli_target_{uuid.uuid4().hex[:8]}"
    provider = f"cli_provider_{uuid.uuid4().hex[:8]}"
    write_distribution(tmp_path / "site", "cli-downstream", entry_points={"downstream": provider}, modules={
        f"{target}.py": "def compute(x):\n    return x\n\ndef fast():\n    return 0\n",
        f"{provider}.py": textwrap.dedent(f"""
            def register(registry, args):
                registry.register("{target}.compute", lambda x: x, purpose="demo replacement")
                if getattr(args, "use_fast_path", False):
                    registry.register("{target}.fast", lambda: 1)
                if getattr(args, "typo", False):
                    registry.register("{target}.compte", lambda x: x)
        """),
    })
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("MINDSPEED_MS_DISABLE", ",".join(BUILTIN))
    monkeypatch.delenv("MINDSPEED_AI_FRAMEWORK", raising=False)
    return target


def test_patches_lists_registered_patches_without_importing_targets(
    downstream: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["patches"]) == 0
    out = capsys.readouterr().out
    header, rule, row = out.splitlines()[:3]
    assert header.split() == ["target", "kind", "state", "replacement", "provider", "registered", "at", "reason"]
    assert set(rule) <= {"-", " "}
    assert row.split()[:3] == [f"{downstream}.compute", "replace", "registered"]
    assert "downstream" in row
    assert "demo replacement" in row
    assert "cli_provider_" in row
    assert "1 patches, pytorch mode; providers: downstream" in out
    assert downstream not in sys.modules


def test_patches_json_is_the_only_thing_on_stdout(downstream: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["patches", "--ai-framework", "mindspore", "--json", "--", "--use-fast-path"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["framework"] == "mindspore"
    assert data["applied"] is False
    assert [(p["target"], p["state"], p["provider"]) for p in data["patches"]] == [
        (f"{downstream}.compute", "registered", "downstream"), (f"{downstream}.fast", "registered", "downstream")]
    assert data["providers"]["registered"] == ["downstream"]


def test_disabled_provider_is_reported_as_skipped(
    downstream: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINDSPEED_MS_DISABLE", ",".join([*BUILTIN, "downstream"]))
    assert main(["patches"]) == 0
    assert "downstream (disabled by MINDSPEED_MS_DISABLE)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv", [["patches", "--apply"], ["patches", "--ai-framework", "jax"], ["verify", "--bogus"], []]
)
def test_usage_errors_exit_2(downstream: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_invalid_framework_in_environment_exits_2(
    downstream: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MINDSPEED_AI_FRAMEWORK", "tensorflow")
    assert main(["patches"]) == 2
    assert "'tensorflow'" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "patches" in capsys.readouterr().out


def test_verify_passes_when_every_target_resolves(downstream: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--ai-framework", "pytorch"]) == 0
    assert f"ok           {downstream}.compute" in capsys.readouterr().out


@pytest.mark.parametrize("static", [False, True])
def test_verify_fails_on_a_typo_with_a_suggestion(
    downstream: str, static: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["verify", "--ai-framework", "pytorch", "--json", *(["--static"] if static else []), "--", "--typo"]
    assert main(argv) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert data["static"] is static
    [typo] = [item for item in data["targets"] if item["state"] == "missing"]
    assert typo["target"] == f"{downstream}.compte"
    assert "'compute'" in typo["reason"]
    assert typo["suggestions"] == ["compute"]
    assert typo["provider"] == "downstream"


def test_failing_provider_exits_1_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = f"cli_broken_{uuid.uuid4().hex[:8]}"
    write_distribution(tmp_path, "cli-broken", entry_points={"broken": f"{module}:register"},
                       modules={f"{module}.py": "def register(registry, args):\n    registry.register('a..b')\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MINDSPEED_MS_DISABLE", ",".join(BUILTIN))
    assert main(["patches"]) == 1
    assert "provider 'broken'" in capsys.readouterr().err


def _megatron_site(tmp_path: Path) -> dict[str, str]:
    write_distribution(tmp_path / "site", "megatron-demo", entry_points={"megatron-demo": "megatron_demo_provider"},
                       modules={"megatron_demo_provider.py": MEGATRON_PROVIDER})
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(tmp_path / "site"))
    if BUILTIN:
        env["MINDSPEED_MS_DISABLE"] = ",".join(BUILTIN)
    return env


_CHECKED_RUN = """
import sys
from mindspeed_ms.cli import main
code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"megatron", "torch", "msadapter", "mindspore"})
print("IMPORTED:", ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


def test_static_verify_of_real_megatron_targets_imports_nothing(tmp_path: Path) -> None:
    env = _megatron_site(tmp_path)
    completed = subprocess.run([sys.executable, "-c", _CHECKED_RUN, "verify", "--static"], env=env,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 1, completed.stderr
    lines = completed.stdout.splitlines()
    assert "ok           megatron.core.tensor_parallel.random._set_cuda_rng_state" in lines
    assert "ok           megatron.core.tensor_parallel.layers.ColumnParallelLinear.forward" in lines
    assert any(line.startswith("missing      megatron.core.tensor_parallel.random._set_cuda_rng_stat: ")
               and "did you mean '_set_cuda_rng_state'" in line for line in lines)
    assert "IMPORTED: \n" in completed.stderr


def test_console_script_verifies_and_applies_real_megatron_targets(tmp_path: Path) -> None:
    script = shutil.which("mindspeed-ms", path=os.path.dirname(sys.executable))
    assert script is not None, "the console script is installed with the package"
    env = _megatron_site(tmp_path)
    # the MindSpore patch set: `verify` decides the framework as a training script would (default pytorch)
    verify = subprocess.run([script, "verify", "--ai-framework", "mindspore", "--json", "--", "--narrow"], env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert verify.returncode == 1, verify.stderr
    states = {item["target"].rpartition(".")[2]: item for item in json.loads(verify.stdout)["targets"]}
    assert states["_set_cuda_rng_state"]["state"] == "ok"
    assert states["forward"]["state"] == "ok"
    assert states["_set_cuda_rng_stat"]["state"] == "missing"
    assert states["model_parallel_cuda_manual_seed"]["state"] == "incompatible"
    assert "'te_rng_tracker'" in states["model_parallel_cuda_manual_seed"]["reason"]
    applied = subprocess.run([script, "patches", "--ai-framework", "mindspore", "--apply", "--json"], env=env,
                             capture_output=True, text=True, timeout=300, check=False)
    assert applied.returncode == 0, applied.stderr
    data = json.loads(applied.stdout)
    assert {p["target"].rpartition(".")[2]: p["state"] for p in data["patches"]} == {
        "transformer_engine": "applied", "_set_cuda_rng_state": "pending-import", "forward": "pending-import",
        "_set_cuda_rng_stat": "pending-import"}


def test_patches_without_apply_imports_neither_msadapter_nor_targets(tmp_path: Path) -> None:
    env = _megatron_site(tmp_path)
    completed = subprocess.run([sys.executable, "-c", _CHECKED_RUN, "patches", "--ai-framework", "mindspore"],
                               env=env, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr
    assert "megatron.core.tensor_parallel.random._set_cuda_rng_state" in completed.stdout
    assert "no CUDA generator on MindSpore" in completed.stdout
    assert "IMPORTED: \n" in completed.stderr


def test_patches_and_static_verify_run_without_mindspore(tmp_path):
    # A core-only install: MindSpore cannot be imported. Listing must not import it (lazy
    # replacements, device "unknown"), and static verification judges every target, crashing on none.
    script = tmp_path / "no_mindspore.py"
    script.write_text("import sys\nsys.modules['mindspore'] = None\nfrom mindspeed_ms.cli import main\n"
                      "sys.exit(main(sys.argv[1:]))\n")
    env = {**os.environ, "MINDSPEED_MS_DEVICE": ""}
    listed = subprocess.run([sys.executable, str(script), "patches", "--ai-framework", "mindspore", "--json"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    mindspeed = [p for p in data["patches"] if p["provider"] == "mindspeed"]
    assert mindspeed
    assert all(p["replacement"].startswith("mindspeed_ms.") for p in mindspeed)
    checked = subprocess.run([sys.executable, str(script), "verify", "--static", "--json"],
                             capture_output=True, text=True, env=env, timeout=120)
    assert checked.returncode in (0, 1), checked.stderr
    assert "Traceback" not in checked.stderr
    assert json.loads(checked.stdout)["targets"]


def test_patches_shows_a_downstream_replacement_superseding_a_built_in_fix(tmp_path, monkeypatch, capsys):
    provider = f"cli_sync_{uuid.uuid4().hex[:8]}"
    target = "megatron.core.distributed.param_and_grad_buffer._ParamAndGradBucketGroup.start_grad_sync"
    write_distribution(tmp_path / "site", "cli-sync", entry_points={"sync": provider}, modules={
        f"{provider}.py": textwrap.dedent(f"""
            def start_grad_sync(self):
                return None

            def register(registry, args):
                registry.register("{target}", start_grad_sync)  # no force_patch: ours is a fallback
        """),
    })
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("MINDSPEED_MS_DEVICE", "CPU")
    monkeypatch.delenv("MINDSPEED_MS_DISABLE", raising=False)
    assert main(["patches", "--ai-framework", "mindspore"]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith(target)]
    assert f"{provider}.start_grad_sync" in row
    assert " sync " in row
    assert "supersedes built-in mindspeed_ms.compat.megatron_parallel.start_grad_sync" in row
    assert main(["patches", "--ai-framework", "mindspore", "--json"]) == 0
    (entry,) = [p for p in json.loads(capsys.readouterr().out)["patches"] if p["target"] == target]
    assert entry["provider"] == "sync"
    assert "'megatron_core'" in entry["superseded"][0]
