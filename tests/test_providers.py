"""Tests of mindspeed_ms.adaptation.providers: discovery, disabling, registration and verification of providers."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from _helpers import builtin_providers, unique, write_files

from mindspeed_ms.adaptation.providers import (
    Provider,
    as_provider,
    discover_providers,
    register_providers,
)
from mindspeed_ms.adaptation.settings import Settings
from mindspeed_ms.engine.registry import PatchRegistry
from mindspeed_ms.errors import ProviderError
from mindspeed_ms.testing import write_distribution


def _disabled(value: str) -> frozenset[str]:
    """Return the names ``MINDSPEED_MS_DISABLE=value`` disables, as the adaptation's settings read them."""
    return Settings.from_environ({"MINDSPEED_MS_DISABLE": value}).disabled


# -- the provider protocol ------------------------------------------------------------------------
def test_a_plain_callable_is_a_provider_named_after_its_entry_point() -> None:
    def register(registry: PatchRegistry, args: object) -> None:
        pass

    provider = as_provider(register, "downstream", "entry point 'downstream'")
    assert provider.name == "downstream"
    assert provider.register is register
    assert provider.requires == ()


def test_an_object_with_name_requires_and_register_is_a_provider() -> None:
    calls: list[object] = []
    obj = SimpleNamespace(name="mine", requires="packaging>=20", register=lambda registry, args: calls.append(args))
    provider = as_provider(obj, "fallback", "test")
    assert provider.name == "mine"
    assert provider.requires == ("packaging>=20",)
    provider.register(None, "args")
    assert calls == ["args"]


@pytest.mark.parametrize("bad", [42, SimpleNamespace(name="x", register="not callable")])
def test_something_that_cannot_register_is_rejected_by_name(bad: object) -> None:
    with pytest.raises(ProviderError, match="not a provider") as info:
        as_provider(bad, "broken", "entry point 'broken'")
    assert info.value.provider == "broken"


def test_malformed_requires_is_a_provider_error() -> None:
    obj = SimpleNamespace(name="mine", requires="not a requirement !!", register=lambda registry, args: None)
    with pytest.raises(ProviderError, match="malformed requires"):
        as_provider(obj, "mine", "test")


# -- built-in discovery ---------------------------------------------------------------------------
@pytest.fixture()
def builtin_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    package = unique("builtin_patches")
    target = unique("builtin_target")
    write_files(tmp_path, {
        f"{package}/__init__.py": '"""Stand-in for mindspeed_ms.patches."""\n',
        f"{package}/beta.py": f"""
            def register(registry, args):
                registry.register("{target}.g", lambda: "beta")
        """,
        f"{package}/alpha.py": f"""
            requires = ["packaging>=20"]
            def register(registry, args):
                registry.register("{target}.f", lambda: "alpha")
        """,
        f"{package}/renamed.py": """
            name = "custom-name"
            def register(registry, args):
                pass
        """,
        f"{package}/_helpers.py": "raise RuntimeError('private modules are never imported')\n",
        f"{target}.py": "def f():\n    return 'f'\n\ndef g():\n    return 'g'\n",
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


def test_builtin_providers_are_every_public_module_in_alphabetical_order(builtin_package: str) -> None:
    discovery = discover_providers({}, entry_points=False, builtin_package=builtin_package)
    assert [p.name for p in discovery.providers] == ["alpha", "beta", "custom-name"]
    assert discovery.providers[0].requires == ("packaging>=20",)
    assert f"{builtin_package}._helpers" not in sys.modules


def test_disabled_builtin_is_never_imported(builtin_package: str) -> None:
    discovery = discover_providers(_disabled(" beta , alpha"), entry_points=False,
                                   builtin_package=builtin_package)
    assert [p.name for p in discovery.providers] == ["custom-name"]
    assert sorted(item.name for item in discovery.disabled) == ["alpha", "beta"]
    assert f"{builtin_package}.beta" not in sys.modules
    assert f"{builtin_package}.alpha" not in sys.modules


def test_provider_can_be_disabled_by_its_own_name(builtin_package: str) -> None:
    discovery = discover_providers(_disabled("custom-name"), entry_points=False,
                                   builtin_package=builtin_package)
    assert "custom-name" not in [p.name for p in discovery.providers]
    assert [item.name for item in discovery.disabled] == ["custom-name"]


def test_unknown_disabled_name_is_a_warning(builtin_package: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mindspeed_ms"):
        discovery = discover_providers(_disabled("alhpa"), entry_points=False,
                                       builtin_package=builtin_package)
    assert discovery.unknown_disabled == ("alhpa",)
    assert "'alhpa'" in caplog.text
    assert "'alpha'" in caplog.text
    assert len(discovery.providers) == 3


def test_provider_that_fails_to_import_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = unique("broken_patches")
    write_files(tmp_path, {f"{package}/__init__.py": "", f"{package}/bad.py": "import does_not_exist_anywhere\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ProviderError, match="'bad'.*failed to load.*does_not_exist_anywhere") as info:
        discover_providers({}, entry_points=False, builtin_package=package)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_real_builtin_package_is_discovered_in_module_order_without_error() -> None:
    discovery = discover_providers({}, entry_points=False)
    assert [p.origin.rpartition(".")[2] for p in discovery.providers] == builtin_providers()
    assert all(p.origin.startswith("built-in module mindspeed_ms.patches.") for p in discovery.providers)


# -- entry points from real distributions ---------------------------------------------------------
@pytest.fixture(scope="module")
def installed_distribution(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Build a tiny distribution with setuptools and pip-install it into a folder of its own."""
    source = tmp_path_factory.mktemp("demo_source")
    module = unique("demo_provider")
    write_files(source, {
        "pyproject.toml": f"""
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "demo-provider"
            version = "1.2"

            [project.entry-points."mindspeed_ms.adaptations"]
            demo = "{module}"
        """,
        f"{module}.py": """
            name = "demo"
            def register(registry, args):
                registry.register("json.JSONDecoder.raw_decode", lambda self, s, idx=0: ("demo", idx),
                                  purpose="demo provider")
        """,
    })
    site = tmp_path_factory.mktemp("demo_site")
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(site), str(source)], capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr
    return site, module


def test_entry_point_of_an_installed_distribution_is_discovered(
    installed_distribution: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    site, module = installed_distribution
    monkeypatch.syspath_prepend(str(site))
    discovery = discover_providers({}, builtin=False)
    demo = [p for p in discovery.providers if p.name == "demo"]
    assert len(demo) == 1
    assert "demo-provider 1.2" in demo[0].origin
    registry = PatchRegistry("entry-points")
    run = register_providers(registry, demo, SimpleNamespace())
    assert run.registered == ("demo",)
    [status] = registry.status()
    assert status.target == "json.JSONDecoder.raw_decode"
    assert status.provider == "demo"


def test_disabled_entry_point_is_never_imported(
    installed_distribution: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    site, module = installed_distribution
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, module, raising=False)
    discovery = discover_providers(_disabled("demo"), builtin=False)
    assert "demo" not in [p.name for p in discovery.providers]
    assert [item.name for item in discovery.disabled] == ["demo"]
    assert module not in sys.modules


def test_written_distribution_exposes_its_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = unique("written_provider")
    write_distribution(tmp_path, "written-provider", version="0.3",
                       modules={f"{module}.py": "def register(registry, args):\n    pass\n"},
                       entry_points={"written": f"{module}:register"})
    monkeypatch.syspath_prepend(str(tmp_path))
    discovery = discover_providers({}, builtin=False)
    [provider] = [p for p in discovery.providers if p.name == "written"]
    assert "written-provider 0.3" in provider.origin
    assert provider.register.__module__ == module


# -- registration ---------------------------------------------------------------------------------
def test_provider_that_raises_is_named_and_every_registration_of_the_run_withdrawn() -> None:
    def good(registry: PatchRegistry, args: object) -> None:
        registry.register("json.dumps", lambda *a, **k: "good")

    def bad(registry: PatchRegistry, args: object) -> None:
        registry.register("json.loads", lambda *a, **k: "bad")
        registry.block("xml.dom")
        raise KeyError("boom")

    registry = PatchRegistry("raising")
    providers = [Provider("good", good, origin="test"), Provider("bad", bad, origin="test"),
                 Provider("never", good, origin="test")]
    with pytest.raises(ProviderError, match="'bad'.*KeyError.*withdrawn") as info:
        register_providers(registry, providers, SimpleNamespace())
    assert info.value.provider == "bad"
    assert isinstance(info.value.__cause__, KeyError)
    assert registry.status() == []  # the earlier provider's registrations too: a retry starts clean


def test_provider_with_unmet_requires_is_skipped_and_reported() -> None:
    registered: list[str] = []
    provider = Provider("needs-nothing-real", lambda registry, args: registered.append("x"),
                        requires=("no-such-distribution-xyz>=1",), origin="test")
    run = register_providers(PatchRegistry("requires"), [provider], SimpleNamespace())
    assert run.registered == ()
    assert registered == []
    [skipped] = run.skipped
    assert skipped.name == "needs-nothing-real"
    assert "no-such-distribution-xyz is not installed" in skipped.reason


def test_providers_receive_the_args(tmp_path: Path) -> None:
    seen: list[object] = []
    args = SimpleNamespace(use_ascend_coc=True)
    register_providers(PatchRegistry("args"), [Provider("p", lambda r, a: seen.append(a))], args)
    assert seen == [args]


def test_provider_importing_its_target_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    target = unique("eager_target")
    write_files(tmp_path, {f"{target}.py": "def f():\n    pass\n"})
    monkeypatch.syspath_prepend(str(tmp_path))

    def eager(registry: PatchRegistry, args: object) -> None:
        __import__(target)
        registry.register(f"{target}.f", lambda: None)

    with caplog.at_level(logging.WARNING, logger="mindspeed_ms"):
        register_providers(PatchRegistry("eager"), [Provider("eager", eager)], SimpleNamespace())
    assert f"provider 'eager' imported '{target}' while registering" in caplog.text


# -- providers and the user's registrations (issue 11 items 14-18, 20) -------------------------------
def _provider(name: str, register) -> Provider:
    return Provider(name, register, origin="test")


def test_a_failed_run_leaves_the_registry_as_before_and_a_retry_works() -> None:
    registry = PatchRegistry("retry")
    registry.register("json.dumps", lambda *a, **k: "user")
    attempts: list[int] = []

    def first(registry: PatchRegistry, args: object) -> None:
        registry.register("json.loads", lambda *a, **k: "first")

    def flaky(registry: PatchRegistry, args: object) -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("not yet")

    providers = [_provider("first", first), _provider("flaky", flaky)]
    with pytest.raises(ProviderError, match="'flaky'"):
        register_providers(registry, providers, SimpleNamespace())
    assert [s.target for s in registry.status()] == ["json.dumps"]
    run = register_providers(registry, providers, SimpleNamespace())
    assert run.registered == ("first", "flaky")
    assert [s.target for s in registry.status()] == ["json.dumps", "json.loads"]


def test_withdrawing_a_provider_keeps_the_users_identical_registration() -> None:
    def shared(*args: object, **kwargs: object) -> str:
        return "shared"

    def shared_wrapper(fn):
        return fn

    registry = PatchRegistry("identical")
    register_providers(registry, [_provider("p", lambda r, a: (r.register("json.dumps", shared),
                                                               r.register("json.loads", shared_wrapper)))],
                       SimpleNamespace())
    registry.register("json.dumps", shared)
    registry.register("json.loads", shared_wrapper)
    registry.withdraw_provider("p")
    statuses = {s.target: s for s in registry.status()}
    assert statuses["json.dumps"].kinds == ("replace",)
    assert statuses["json.dumps"].provider is None
    assert statuses["json.loads"].kinds == ("wrap",)


def test_a_provider_that_unregisters_then_raises_gives_back_the_users_registration() -> None:
    def user_wrapper(fn):
        return fn

    registry = PatchRegistry("unregister")
    registry.register("json.dumps", user_wrapper)

    def meddler(registry: PatchRegistry, args: object) -> None:
        registry.unregister("json.dumps")
        raise ValueError("the provider's own error")

    with pytest.raises(ProviderError, match="ValueError: the provider's own error") as info:
        register_providers(registry, [_provider("meddler", meddler)], SimpleNamespace())
    assert isinstance(info.value.__cause__, ValueError)
    [status] = registry.status()
    assert status.target == "json.dumps"
    assert status.kinds == ("wrap",)
    assert status.provider is None


def test_a_users_forced_replacement_survives_providers_registering_again() -> None:
    def provided(*args: object, **kwargs: object) -> str:
        return "provided"

    def users(*args: object, **kwargs: object) -> str:
        return "user"

    registry = PatchRegistry("repatch")
    provider = _provider("p", lambda r, a: r.register("json.dumps", provided))
    register_providers(registry, [provider], SimpleNamespace())
    registry.register("json.dumps", users, force_patch=True)  # MindSporeAdaptation.register's default
    # what repatch() does: withdraw the providers, let them register again
    registry.withdraw_provider("p")
    register_providers(registry, [provider], SimpleNamespace())
    import json

    with registry.applied():
        assert json.dumps({}) == "user"
    assert registry.status()[0].replacement.endswith("users")


def test_requirements_belong_to_each_registration() -> None:
    def strict_one(*args: object, **kwargs: object) -> str:
        return "needs-missing"

    def forced(*args: object, **kwargs: object) -> str:
        return "forced"

    registry = PatchRegistry("requires")
    providers = [
        _provider("needy", lambda r, a: r.register("json.dumps", strict_one, requires="no-such-dist-xyz>=1")),
        _provider("forcing", lambda r, a: r.register("json.dumps", forced, force_patch=True)),
    ]
    register_providers(registry, providers, SimpleNamespace())
    import json

    with registry.applied() as report:
        assert json.dumps({}) == "forced"
    assert report.applied == 1
    assert report.statuses[0].requires == ()


def test_a_skipped_registration_is_named_with_its_provider_and_reason() -> None:
    def base_wrapper(fn):
        return lambda *a, **k: "wrapped"

    registry = PatchRegistry("skipped")
    register_providers(registry, [_provider("needy", lambda r, a: r.register(
        "json.dumps", base_wrapper, requires="no-such-dist-xyz>=1"))], SimpleNamespace())
    report = registry.apply()
    registry.revert()
    [status] = report.statuses
    assert status.state == "skipped"
    assert "base_wrapper" in status.reason
    assert "'needy'" in status.reason
    assert "no-such-dist-xyz is not installed" in status.reason


def test_mindspore_adaptation_register_inside_a_provider_fills_the_providers_registry() -> None:
    from mindspeed_ms.adaptation import MindSporeAdaptation, default_registry

    def porting(registry: PatchRegistry, args: object) -> None:
        MindSporeAdaptation.register("json.dumps", lambda *a, **k: "ported")  # the README's recipe

    registry = PatchRegistry("collect")
    before = len(default_registry())
    register_providers(registry, [_provider("porting", porting)], SimpleNamespace())
    assert [(s.target, s.provider) for s in registry.status()] == [("json.dumps", "porting")]
    assert len(default_registry()) == before


def test_declared_blocks_are_in_force_before_any_provider_runs(tmp_path: Path) -> None:
    import importlib.util

    seen: list[object] = []
    blocker = SimpleNamespace(name="blocker", blocks=(("json", "a shim that misleads"),),
                              register=lambda r, a: r.block("json", purpose="a shim that misleads"))
    early = _provider("aaa-early", lambda r, a: seen.append(importlib.util.find_spec("json")))
    registry = PatchRegistry("blocks-first")
    try:
        register_providers(registry, [early, as_provider(blocker, "blocker", "test")], SimpleNamespace(),
                           enforce_blocks=True)
        assert seen == [None]
        assert [s.state for s in registry.status() if s.target == "json"] == ["applied"]
    finally:
        registry.revert()
    assert importlib.util.find_spec("json") is not None


def test_declared_blocks_are_lifted_when_a_provider_fails() -> None:
    import importlib.util

    blocker = SimpleNamespace(name="blocker", blocks=("json",), register=lambda r, a: None)

    def failing(registry: PatchRegistry, args: object) -> None:
        raise RuntimeError("boom")

    registry = PatchRegistry("blocks-lifted")
    with pytest.raises(ProviderError):
        register_providers(registry, [as_provider(blocker, "blocker", "test"), _provider("f", failing)],
                           SimpleNamespace(), enforce_blocks=True)
    assert importlib.util.find_spec("json") is not None
    assert len(registry) == 0


def test_a_provider_registering_through_mindspore_adaptation_is_named_at_its_own_line(tmp_path: Path) -> None:
    name = unique("site_provider")
    write_files(tmp_path, {f"{name}.py": """
        from mindspeed_ms.adaptation import MindSporeAdaptation


        def register(registry, args):
            MindSporeAdaptation.register("json.dumps", lambda *a, **k: "ported")
    """})
    sys.path.insert(0, str(tmp_path))
    try:
        module = __import__(name)
        registry = PatchRegistry("sites")
        register_providers(registry, [as_provider(module.register, name, "test")], SimpleNamespace())
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)
    [status] = registry.status()
    assert status.registered_at == f"{tmp_path / (name + '.py')}:6"


def test_a_declared_block_is_named_at_the_providers_register_function() -> None:
    def register(registry: PatchRegistry, args: object) -> None:
        registry.block("no_such_module_zz_declared", purpose="a shim that misleads")

    blocker = SimpleNamespace(name="blocker", blocks=(("no_such_module_zz_declared", "a shim that misleads"),),
                              register=register)
    registry = PatchRegistry("blocks-site")
    try:
        register_providers(registry, [as_provider(blocker, "blocker", "test")], SimpleNamespace(),
                           enforce_blocks=True)
    finally:
        registry.revert()
    [status] = registry.status()
    assert status.registered_at == f"{__file__}:{register.__code__.co_firstlineno}"
