"""mindspeed_ms.adaptation.core: one Adaptation holds settings, framework, registries, watcher; each its own."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _helpers import builtin_providers

from mindspeed_ms.adaptation import Adaptation, Settings
from mindspeed_ms.adaptation.framework import FrameworkChoice
from mindspeed_ms.engine.watcher import ImportWatcher
from mindspeed_ms.testing import write_distribution

BUILTIN = frozenset(builtin_providers())

RECORDER = """
SEEN = []
name = "recorder"

def register_args(parser):
    parser.add_argument("--recorder-splits", type=int, default=3)

def register(registry, args):
    SEEN.append({"ai_framework": args.ai_framework, "lr": args.lr, "recorder_splits": args.recorder_splits})
    args.set_by_provider = True  # a provider may write its view; the caller's namespace never changes
"""


@pytest.fixture()
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A downstream provider (an entry point) that records the args it is handed."""
    module = f"recorder_{uuid.uuid4().hex[:8]}"
    write_distribution(tmp_path, f"recorder-{module}", modules={f"{module}.py": RECORDER},
                       entry_points={"recorder": module})
    monkeypatch.syspath_prepend(str(tmp_path))
    yield __import__(module)
    sys.modules.pop(module, None)


def _only_downstream(**values: object) -> Settings:
    return Settings(disabled=BUILTIN, **values)


def test_the_framework_is_decided_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["train.py", "--ai-framework", "mindspore"])
    adaptation = Adaptation(settings=Settings())
    first = adaptation.framework
    assert first == FrameworkChoice("mindspore", "flag")
    monkeypatch.setattr(sys, "argv", ["train.py", "--ai-framework", "pytorch"])
    assert adaptation.framework is first


@pytest.mark.parametrize(("argv", "settings", "given", "expected"), [
    ([], Settings(), None, FrameworkChoice("pytorch", "default")),
    ([], Settings(framework="mindspore"), None, FrameworkChoice("mindspore", "environment")),
    (["--ai-framework", "pytorch"], Settings(framework="mindspore"), None, FrameworkChoice("pytorch", "flag")),
    (["--ai-framework", "pytorch"], Settings(), "mindspore", FrameworkChoice("mindspore", "flag")),
])
def test_the_framework_comes_from_the_caller_then_the_flag_then_the_environment_then_the_default(
        argv: list[str], settings: Settings, given: str | None, expected: FrameworkChoice) -> None:
    assert Adaptation(settings=settings, argv=argv, framework=given).framework == expected


def test_the_settings_are_read_once_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINDSPEED_MS_TRACE", "1")
    adaptation = Adaptation()
    assert adaptation.settings.trace is True
    monkeypatch.setenv("MINDSPEED_MS_TRACE", "0")
    assert adaptation.settings.trace is True
    assert adaptation.registry().trace is True


def test_providers_get_the_framework_and_their_flags_and_the_users_namespace_is_untouched(recorder: object) -> None:
    megatron_args = argparse.Namespace(lr=0.1, seq_length=16)
    before = dict(vars(megatron_args))
    adaptation = Adaptation(settings=_only_downstream(), argv=["--recorder-splits", "5"], framework="mindspore")
    registry, run = adaptation.collect_patches(argv=["--recorder-splits", "5"])
    assert run.registered == ("recorder",)
    adaptation.run_providers(registry, megatron_args)
    seen = recorder.SEEN  # type: ignore[attr-defined]
    assert seen[0] == {"ai_framework": "mindspore", "lr": None, "recorder_splits": 5}
    assert seen[1] == {"ai_framework": "mindspore", "lr": 0.1, "recorder_splits": 5}
    assert vars(megatron_args) == before  # no ai_framework, no declared flag, nothing the provider set


def test_repatch_reads_the_users_namespace_and_never_writes_it() -> None:
    adaptation = Adaptation(settings=Settings(disabled=frozenset({"pytorch_cpu"})), argv=[])
    megatron_args = argparse.Namespace(ai_framework="pytorch", lr=0.1)
    assert adaptation.repatch(megatron_args) is None
    assert adaptation.framework == FrameworkChoice("pytorch", "flag")
    assert adaptation.get_args() is megatron_args
    assert vars(megatron_args) == {"ai_framework": "pytorch", "lr": 0.1}


def test_two_adaptations_are_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"iso_target_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("def compute():\n    return 'original'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = Adaptation(settings=Settings(), argv=["--ai-framework", "mindspore"], watcher=ImportWatcher())
    second = Adaptation(settings=Settings(trace=True), argv=[], watcher=ImportWatcher())
    try:
        first.registry().register(f"{name}.compute", lambda: "first")
        assert first.registry() is not second.registry()
        assert len(second.registry()) == 0
        assert first.framework.name == "mindspore"
        assert second.framework.name == "pytorch"
        assert first.registry().trace is False
        assert second.registry().trace is True
        first.registry().apply()  # the target is not imported: it waits on the first one's watcher only
        assert first.watcher.watched() == (name,)
        assert second.watcher.watched() == ()
        module = __import__(name)
        assert module.compute() == "first"
        second.close()
        assert module.compute() == "first"
        first.close()
        assert module.compute() == "original"
    finally:
        first.close()
        second.close()
        sys.modules.pop(name, None)


def test_registrations_inside_a_provider_block_fill_that_registry() -> None:
    adaptation = Adaptation(settings=Settings(), watcher=ImportWatcher())
    other = Adaptation(settings=Settings(), watcher=ImportWatcher()).registry()
    with other.provider("p"):
        assert adaptation.registry_to_fill() is other
    assert adaptation.registry_to_fill() is adaptation.registry()


def test_an_adaptation_that_adopts_hands_mindspeeds_manager_its_registry_until_closed() -> None:
    from mindspeed_ms.patch_manager import MindSpeedPatchesManager

    name = f"adopted_{uuid.uuid4().hex[:8]}"
    target = f"json.{name}"
    adaptation = Adaptation(settings=Settings(adopt_mindspeed=True, disabled=frozenset({"pytorch_cpu"})), argv=[],
                            watcher=ImportWatcher())
    try:
        assert adaptation.execute() is None  # PyTorch mode, adoption asked for
        MindSpeedPatchesManager.register_patch(target, lambda: "mine", create_dummy=True)
        MindSpeedPatchesManager.apply_patches()
        # PyTorch mode applies its own registry: MindSpeed's registrations go there, not to the default one
        assert target in {status.target for status in adaptation.pytorch_registry().status()}
        assert target not in {status.target for status in adaptation.registry().status()}
        assert getattr(json, name)() == "mine"
    finally:
        adaptation.close()
    assert not hasattr(json, name)  # close() reverted it
    MindSpeedPatchesManager.register_patch(f"{target}_after", lambda: "theirs", create_dummy=True)
    assert f"{target}_after" not in {status.target for status in adaptation.pytorch_registry().status()}
