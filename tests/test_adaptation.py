"""Tests of mindspeed_ms.adaptation in this process: MindSporeAdaptation's API in PyTorch mode, logging, tracing.

The MindSpore path of ``execute()`` imports MSAdapter; it is tested in fresh interpreters in
tests/test_adaptor.py.
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from _helpers import ROOT, subprocess_env

from mindspeed_ms import adaptation
from mindspeed_ms.adaptation import (
    Adaptation,
    MindSporeAdaptation,
    Settings,
    configure_logging,
    current_rank,
    replace_default_adaptation,
    write_trace_report,
)
from mindspeed_ms.engine.registry import PatchRegistry
from mindspeed_ms.engine.watcher import ImportWatcher
from mindspeed_ms.errors import FrameworkError, PatchValidationError, SettingError


@pytest.fixture()
def watcher() -> ImportWatcher:
    """The test's own import watcher: what its adaptation arms is its own."""
    return ImportWatcher()


@pytest.fixture(autouse=True)
def own(monkeypatch: pytest.MonkeyPatch, watcher: ImportWatcher) -> Iterator[Adaptation]:
    """Make a fresh Adaptation the default one for the test (MindSporeAdaptation's); close it afterwards."""
    monkeypatch.delenv("MINDSPEED_AI_FRAMEWORK", raising=False)
    monkeypatch.setattr(sys, "argv", ["train.py"])
    mine = Adaptation(watcher=watcher)
    previous = replace_default_adaptation(mine)
    yield mine
    mine.close()
    replace_default_adaptation(previous)


@pytest.fixture()
def target_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    name = f"adaptation_target_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        def compute(x):
            return ("original", x)

        def rng_state(new_state, device=-1):
            return "original"
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return __import__(name)


def test_register_keeps_mindspeed_llm_argument_names_and_defaults() -> None:
    parameters = inspect.signature(MindSporeAdaptation.register).parameters
    assert [(p.name, p.default) for p in list(parameters.values())[:5]] == [
        ("orig_func_name", inspect.Parameter.empty), ("new_func", None), ("force_patch", True),
        ("create_dummy", False), ("check_patch", False)]


def test_register_apply_revert_work_explicitly_in_pytorch_mode(target_module: ModuleType) -> None:
    def compute(x: object) -> tuple[str, object]:
        return ("patched", x)

    MindSporeAdaptation.register(f"{target_module.__name__}.compute", compute)
    [status] = MindSporeAdaptation.status()
    assert status.state == "registered"
    assert status.registered_at.startswith(__file__)
    report = MindSporeAdaptation.apply()
    assert report.applied == 1
    assert target_module.compute is compute
    MindSporeAdaptation.revert()
    assert target_module.compute(1) == ("original", 1)


def test_force_patch_defaults_to_true_like_mindspeed_llm(target_module: ModuleType) -> None:
    first, second = (lambda x: 1), (lambda x: 2)
    MindSporeAdaptation.register(f"{target_module.__name__}.compute", first)
    MindSporeAdaptation.register(f"{target_module.__name__}.compute", second)
    MindSporeAdaptation.apply()
    assert target_module.compute is second


def test_check_patch_logs_each_call(target_module: ModuleType, caplog: pytest.LogCaptureFixture) -> None:
    MindSporeAdaptation.register(f"{target_module.__name__}.compute", lambda x: x, check_patch=True)
    MindSporeAdaptation.apply()
    with caplog.at_level(logging.INFO, logger="mindspeed_ms"):
        target_module.compute(1)
        target_module.compute(2)
    assert caplog.text.count(f"call into patched {target_module.__name__}.compute") == 2
    assert MindSporeAdaptation.status()[0].calls == 2


def test_options_pass_kind_requires_and_purpose(target_module: ModuleType) -> None:
    def double(fn: object) -> object:
        return lambda x: ("wrapped", fn(x))  # type: ignore[operator]

    name = target_module.__name__
    MindSporeAdaptation.register(f"{name}.compute", double, kind="wrap", purpose="shows kind=")
    MindSporeAdaptation.register(f"{name}.rng_state", lambda s, d=-1: "x", requires="no-such-dist-xyz>=1")
    MindSporeAdaptation.apply()
    assert target_module.compute(3) == ("wrapped", ("original", 3))
    statuses = {s.target: s for s in MindSporeAdaptation.status()}
    assert statuses[f"{name}.compute"].purpose == "shows kind="
    assert statuses[f"{name}.rng_state"].state == "skipped"
    with pytest.raises(PatchValidationError):
        MindSporeAdaptation.register(f"{name}.compute", double, kind="decorate")


def test_execute_in_pytorch_mode_does_nothing(monkeypatch: pytest.MonkeyPatch, own: Adaptation,
                                              watcher: ImportWatcher) -> None:
    monkeypatch.setenv("MINDSPEED_MS_DISABLE", "pytorch_cpu")
    before = set(sys.modules)
    assert MindSporeAdaptation.execute() is None
    assert own.registries() == ()
    assert watcher.watched() == ()
    assert not {name for name in set(sys.modules) - before if name.startswith(("msadapter", "mindspore"))}


def test_execute_in_pytorch_mode_without_cuda_arms_only_the_pytorch_cpu_patches_on_megatron_import(
        monkeypatch: pytest.MonkeyPatch, watcher: ImportWatcher) -> None:
    monkeypatch.delenv("MINDSPEED_MS_DISABLE", raising=False)
    monkeypatch.delitem(sys.modules, "megatron", raising=False)
    mine = Adaptation(watcher=watcher, cuda_device_files=("/nonexistent/nvidiactl",))
    replace_default_adaptation(mine)  # the fixture puts its predecessor back
    MindSporeAdaptation.register("json.dumps", lambda *a, **k: "mindspore-only")
    before = set(sys.modules)
    try:
        assert MindSporeAdaptation.execute() is None
        assert mine.registries() == (mine.registry(),)  # nothing of PyTorch mode until megatron is imported
        assert watcher.watched() == ("megatron",)
        watcher.fire("megatron", ModuleType("megatron"))  # what the end of `import megatron` does
        assert "megatron" not in watcher.watched()  # once
        registry = mine.pytorch_registry()
        assert registry is not mine.registry()
        statuses = registry.status()
        assert {status.provider for status in statuses} == {"pytorch_cpu"}
        assert "megatron.core.tensor_parallel.random.CudaRNGStatesTracker.add" in {s.target for s in statuses}
        import json

        assert json.dumps(1) == "1"  # the default registry's registration is not applied in PyTorch mode
        assert not {name for name in set(sys.modules) - before
                    if name.startswith(("msadapter", "mindspore", "torch", "megatron"))}
    finally:
        mine.close()


def test_closing_before_megatron_is_imported_cancels_the_deferred_pytorch_cpu_patches(
        monkeypatch: pytest.MonkeyPatch, watcher: ImportWatcher) -> None:
    monkeypatch.delenv("MINDSPEED_MS_DISABLE", raising=False)
    monkeypatch.delitem(sys.modules, "megatron", raising=False)
    mine = Adaptation(watcher=watcher, cuda_device_files=("/nonexistent/nvidiactl",))
    assert mine.execute() is None
    mine.close()
    assert watcher.watched() == ()
    assert watcher not in sys.meta_path


def test_execute_rejects_an_invalid_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["train.py", "--ai-framework", "paddle"])
    with pytest.raises(FrameworkError, match="'paddle'.*'pytorch', 'mindspore'"):
        MindSporeAdaptation.execute()


def test_get_args_reads_argv_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["train.py", "--use-ascend-coc", "--tensor-model-parallel-size", "2"])
    args = MindSporeAdaptation.get_args()
    assert args.use_ascend_coc is True
    assert args.tensor_model_parallel_size == "2"


def test_repatch_to_pytorch_reverts_and_keeps_the_args(target_module: ModuleType) -> None:
    MindSporeAdaptation.register(f"{target_module.__name__}.compute", lambda x: x)
    MindSporeAdaptation.apply()
    args = SimpleNamespace(ai_framework="pytorch", seed=3)
    assert MindSporeAdaptation.repatch(args) is None
    assert target_module.compute(1) == ("original", 1)
    assert MindSporeAdaptation.get_args() is args
    assert MindSporeAdaptation.status()[0].state == "reverted"


def test_repatch_rejects_an_unknown_framework() -> None:
    with pytest.raises(FrameworkError, match="'tensorflow'"):
        MindSporeAdaptation.repatch(SimpleNamespace(ai_framework="tensorflow"))


@pytest.mark.parametrize(
    ("environ", "rank"),
    [({}, 0), ({"RANK": "3"}, 3), ({"RANK_ID": "1", "RANK": "0"}, 1), ({"RANK_ID": "", "RANK": "2"}, 2),
     ({"RANK_ID": "\u00b2", "RANK": "2"}, 2)],  # '²'.isdigit() is True, int('²') raises
)
def test_rank_prefers_msrun_rank_id(environ: dict[str, str], rank: int) -> None:
    assert current_rank(environ) == rank


@pytest.fixture()
def package_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("mindspeed_ms")
    saved = (logger.level, list(logger.handlers), logger.propagate)
    yield logger
    logger.setLevel(saved[0])
    logger.handlers[:] = saved[1]
    logger.propagate = saved[2]


def test_log_level_comes_from_the_settings(package_logger: logging.Logger) -> None:
    configure_logging(Settings.from_environ({"MINDSPEED_MS_LOG_LEVEL": "debug"}))
    assert package_logger.level == logging.DEBUG
    configure_logging(Settings.from_environ({"MINDSPEED_MS_LOG_LEVEL": "40"}))
    assert package_logger.level == logging.ERROR


@pytest.mark.parametrize(("variable", "value"), [("MINDSPEED_MS_TRACE", "flase"), ("MINDSPEED_MS_TRACE", "2"),
                                                  ("MINDSPEED_MS_MISSING_TARGETS", "bogus")])
def test_a_malformed_switch_of_the_default_registry_is_a_typed_error(monkeypatch: pytest.MonkeyPatch,
                                                                     variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingError, match=variable) as caught:
        MindSporeAdaptation.registry()
    assert isinstance(caught.value, ValueError)
    assert (caught.value.variable, caught.value.value) == (variable, value)


@pytest.mark.parametrize("value", ["flase", "2", "nope"])
def test_a_malformed_adoption_switch_stops_pytorch_mode_too(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MINDSPEED_MS_ADOPT_MINDSPEED", value)
    metapath = list(sys.meta_path)
    with pytest.raises(SettingError, match="MINDSPEED_MS_ADOPT_MINDSPEED"):
        MindSporeAdaptation.execute()
    assert sys.meta_path == metapath  # nothing was armed


def test_trace_report_counts_calls_per_target(target_module: ModuleType, tmp_path: Path) -> None:
    registry = PatchRegistry("traced", trace=True)
    name = target_module.__name__
    def traced_compute(x: int) -> tuple[str, int]:
        return ("patched", x)

    registry.register(f"{name}.compute", traced_compute)
    registry.register(f"{name}.rng_state", lambda s, device=-1: "patched")
    with registry.applied():
        for value in range(3):
            target_module.compute(value)
        written = write_trace_report(str(tmp_path / "trace.json"), registry)
    data = json.loads(Path(written).read_text())
    replacement = f"{__name__}.test_trace_report_counts_calls_per_target.<locals>.traced_compute"
    assert data["called"] == [{"target": f"{name}.compute", "calls": 3, "replacement": replacement,
                               "provider": None}]
    assert data["not_called"] == [f"{name}.rng_state"]
    assert data["traced"] is True
    assert len(data["patches"]) == 2


def test_trace_file_name_gets_the_rank(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    registry = PatchRegistry("ranked", trace=True)
    monkeypatch.setenv("RANK_ID", "1")
    assert write_trace_report(str(tmp_path / "trace.json"), registry) == str(tmp_path / "trace.rank1.json")
    assert write_trace_report(str(tmp_path / "t_{rank}.json"), registry) == str(tmp_path / "t_1.json")


def test_without_tracing_the_installed_object_is_the_replacement(target_module: ModuleType) -> None:
    def compute(x: object) -> object:
        return x

    MindSporeAdaptation.register(f"{target_module.__name__}.compute", compute)
    MindSporeAdaptation.apply()
    assert target_module.compute is compute
    assert MindSporeAdaptation.status()[0].calls is None


def test_msadapter_missing_is_an_import_error_saying_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "msadapter", None)  # blocks the import, as if not installed
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with pytest.raises(ImportError, match=r"needs MSAdapter.*pip install msadapter") as info:
        adaptation.prepare_backend()
    assert info.value.name == "msadapter"


# --- the call-trace report of a run that does not end well (subprocesses) ---
_CRASHING = textwrap.dedent("""
    import os, signal, sys, time
    if "--ai-framework" in sys.argv:
        import mindspeed_ms.adaptor  # MindSpore mode: the report is armed by the adaptation itself
    sys.path.insert(0, sys.argv[1])
    import trace_target
    from mindspeed_ms.adaptation import MindSporeAdaptation

    def traced(x):
        return ("patched", x)

    MindSporeAdaptation.register("trace_target.compute", traced)
    MindSporeAdaptation.apply()
    trace_target.compute(0)
    trace_target.compute(1)
    how = sys.argv[2]
    if how == "fork":  # a forked child (a data-loader worker) exits after the parent crashed
        child = os.fork()
        if child == 0:
            time.sleep(1.5)
            sys.exit(0)
        open(sys.argv[3], "w").write(str(child))
    for value in range(3):
        trace_target.compute(value)
    if how == "own_handler":  # the application's own SIGTERM handler, installed later, decides
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(7))
    if how in ("sigterm", "own_handler"):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
    if how == "os_exit_later":  # another exit handler, registered later, runs first and ends the process
        import atexit
        atexit.register(os._exit, 1)
    raise RuntimeError("boom")
""")


@pytest.mark.parametrize(("how", "framework"), [("exception", "pytorch"), ("sigterm", "pytorch"), ("fork", "pytorch"),
                                               ("os_exit_later", "pytorch"), ("own_handler", "pytorch"),
                                               ("fork", "mindspore")])
def test_a_crashing_runs_trace_report_is_complete_up_to_the_crash(tmp_path: Path, how: str, framework: str) -> None:
    import os
    import subprocess
    import time

    (tmp_path / "trace_target.py").write_text("def compute(x):\n    return ('original', x)\n")
    report = tmp_path / "trace.json"
    env = subprocess_env(drop=("MINDSPEED",), MINDSPEED_MS_TRACE="1", MINDSPEED_MS_TRACE_FILE=str(report),
                         PYTHONPATH=str(ROOT))
    child_file = tmp_path / "child.pid"
    argv = ["--ai-framework", "mindspore"] if framework == "mindspore" else []
    done = subprocess.run([sys.executable, "-c", _CRASHING, str(tmp_path), how, str(child_file), *argv], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    if how == "fork":
        child = int(child_file.read_text())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
    assert report.exists(), done.stderr[-2000:]
    data = json.loads(report.read_text())
    [called] = data["called"]
    assert called["target"] == "trace_target.compute"
    assert called["calls"] == 5  # every call up to the crash
    expected = {"exception": "exception: RuntimeError: boom", "fork": "exception: RuntimeError: boom",
                "os_exit_later": "exception: RuntimeError: boom", "sigterm": "signal: SIGTERM",
                "own_handler": "exit"}[how]
    # with the application's own handler, our watcher may note the signal before its sys.exit(7) ends the process
    assert data["ending"] == expected or (how == "own_handler" and data["ending"] == "signal: SIGTERM")
    if how == "sigterm":
        assert done.returncode == 128 + 15
    if how == "own_handler":
        assert done.returncode == 7  # their handler ran; ours only wrote the report
