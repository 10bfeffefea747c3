"""Tests of the pytest plugin (fixtures, ``--mindspeed-ms-verify``) and of mindspeed_ms.testing's assertions."""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from _helpers import builtin_providers

from mindspeed_ms.engine.registry import PatchRegistry
from mindspeed_ms.testing import assert_not_patched, assert_patched, write_distribution

pytest_plugins = ["pytester"]

BUILTIN = builtin_providers()

PROVIDER = """
import os

name = "downstream"

def register(registry, args):
    registry.register("plugin_target.compute", compute)
    registry.register("plugin_target.Model.forward", forward)
    if args.plugin_splits is not None and args.plugin_splits > 1:  # a typed flag gates a registration
        registry.register("plugin_target.narrow", narrow)
    if os.environ.get("PLUGIN_BROKEN_PATCHES"):
        registry.register("plugin_target.Model.fowrard", forward)  # the typo an upstream rename causes
        registry.register("plugin_target.narrow", narrow)

def register_args(parser):
    parser.add_argument("--plugin-splits", type=int, default=None)

def compute(x, y=1):
    return ("patched", x, y)

def forward(self, hidden):
    return hidden

def narrow(a):
    return a
"""

TARGET = """
def compute(x, y=1):
    return ("original", x, y)

def narrow(a, b):
    return a + b

class Model:
    def forward(self, hidden):
        return hidden
"""


@pytest.fixture()
def plugin_env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = pytester.path / "site"
    write_distribution(site, "plugin-downstream", entry_points={"downstream": "plugin_provider"},
                       modules={"plugin_provider.py": PROVIDER, "plugin_target.py": TARGET})
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("MINDSPEED_MS_DISABLE", ",".join(BUILTIN))
    monkeypatch.setenv("MINDSPEED_AI_FRAMEWORK", "pytorch")  # targets here need no MSAdapter
    return site


def test_verify_adds_one_item_per_target_and_fails_the_typo_by_name(
    pytester: pytest.Pytester, plugin_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLUGIN_BROKEN_PATCHES", "1")
    pytester.makepyfile(test_nothing="def test_placeholder():\n    pass\n")
    result = pytester.runpytest_subprocess("--mindspeed-ms-verify", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(["*collected 5 items*"])
    result.stdout.fnmatch_lines([
        "*mindspeed-ms-verify::plugin_target.compute PASSED*",
        "*mindspeed-ms-verify::plugin_target.Model.forward PASSED*",
        "*mindspeed-ms-verify::plugin_target.Model.fowrard FAILED*",
        "*mindspeed-ms-verify::plugin_target.narrow FAILED*",
    ])
    result.stdout.fnmatch_lines([
        "*plugin_target.Model.fowrard: missing: *did you mean 'forward'*",
        "*registered at *plugin_provider.py:12 by provider 'downstream'*",
        "*plugin_target.narrow: incompatible: replacement plugin_provider.narrow *",
    ])


def test_static_verify_fails_the_typo_without_importing(
    pytester: pytest.Pytester, plugin_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLUGIN_BROKEN_PATCHES", "1")
    pytester.makepyfile(test_imports="""
        import sys

        def test_target_was_not_imported():
            assert "plugin_target" not in sys.modules
    """)
    result = pytester.runpytest_subprocess("--mindspeed-ms-verify", "--mindspeed-ms-static", "-p",
                                           "no:cacheprovider")
    # Static verification reads signatures from source too: the typo and the incompatible replacement fail,
    # and the target module was never imported (the placeholder test passes).
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(["*plugin_target.Model.fowrard: missing*did you mean 'forward'*"])
    result.stdout.fnmatch_lines(["*plugin_target.narrow: incompatible: replacement plugin_provider.narrow *"])


def test_training_flags_reach_the_providers_typed(
    pytester: pytest.Pytester, plugin_env: Path
) -> None:
    pytester.makepyfile(test_nothing="def test_placeholder():\n    pass\n")
    gated = pytester.runpytest_subprocess("--mindspeed-ms-verify", "--mindspeed-ms-training-args",
                                          "--plugin-splits 4", "-v", "-p", "no:cacheprovider")
    gated.assert_outcomes(passed=3, failed=1)  # --plugin-splits 4 (an int > 1) adds the incompatible narrow
    gated.stdout.fnmatch_lines(["*plugin_target.narrow: incompatible*"])
    plain = pytester.runpytest_subprocess("--mindspeed-ms-verify", "--mindspeed-ms-training-args",
                                          "--plugin-splits 1", "-p", "no:cacheprovider")
    plain.assert_outcomes(passed=3)


def test_without_the_option_no_items_are_added(pytester: pytest.Pytester, plugin_env: Path) -> None:
    pytester.makepyfile(test_nothing="def test_placeholder():\n    pass\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_broken_provider_is_one_failing_item(pytester: pytest.Pytester, plugin_env: Path) -> None:
    (plugin_env / "plugin_provider.py").write_text("def register(registry, args):\n    raise ValueError('nope')\n")
    result = pytester.runpytest_subprocess("--mindspeed-ms-verify", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ProviderError: provider 'downstream'*nope*"])


def test_patch_registry_fixture_is_reverted_after_each_test(pytester: pytest.Pytester, plugin_env: Path) -> None:
    pytester.makepyfile(test_fixture="""
        import plugin_target
        from mindspeed_ms.testing import assert_patched, assert_not_patched

        def replacement(x, y=1):
            return "patched"

        def test_patches(patch_registry):
            patch_registry.register("plugin_target.compute", replacement)
            patch_registry.apply()
            assert plugin_target.compute(1) == "patched"
            assert_patched("plugin_target.compute", replacement, registry=patch_registry)

        def test_after(patch_registry):
            assert plugin_target.compute(1) == ("original", 1, 1)
            assert_not_patched("plugin_target.compute", registry=patch_registry)
    """)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_mindspore_adaptation_fixture_applies_the_providers_for_one_test(
    pytester: pytest.Pytester, plugin_env: Path
) -> None:
    pytester.makepyfile(test_adaptation="""
        import sys
        import plugin_target

        def test_applied(mindspore_adaptation):
            assert plugin_target.compute(2) == ("patched", 2, 1)
            assert "msadapter" in sys.modules
            states = {s.target: s.state for s in mindspore_adaptation.status()}
            assert states["plugin_target.compute"] == "applied"

        def test_reverted_after():
            assert plugin_target.compute(2) == ("original", 2, 1)

        def test_applied_again(mindspore_adaptation):
            assert plugin_target.compute(2) == ("patched", 2, 1)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


# -- mindspeed_ms.testing -------------------------------------------------------------------------
@pytest.fixture()
def target_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    name = f"testing_target_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        def compute(x):
            return x

        class Model:
            @staticmethod
            def build():
                return "original"
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield __import__(name)


def _replacement(x: object) -> object:
    return ("patched", x)


def _build() -> str:
    return "patched"


def test_assert_patched_accepts_the_installed_replacement(target_module: ModuleType) -> None:
    registry = PatchRegistry("testing", trace=True)  # a tracing shim keeps __wrapped__
    registry.register(f"{target_module.__name__}.compute", _replacement)
    registry.register(f"{target_module.__name__}.Model.build", _build)
    with registry.applied():
        assert_patched(f"{target_module.__name__}.compute", _replacement, registry=registry)
        assert_patched(f"{target_module.__name__}.Model.build", _build, registry=registry)
        assert_patched(f"{target_module.__name__}.compute", registry=registry)


def test_assert_patched_says_what_is_installed_instead(target_module: ModuleType) -> None:
    registry = PatchRegistry("testing")
    target = f"{target_module.__name__}.compute"
    registry.register(target, _replacement)
    with pytest.raises(AssertionError, match=r"is not patched: its patch is 'registered'.*installed: "
                                             rf"{target_module.__name__}\.compute \(.*\.py:2\)"):
        assert_patched(target, registry=registry)
    with registry.applied():
        with pytest.raises(AssertionError, match=r"not with .*_build.*installed instead is .*_replacement"):
            assert_patched(target, _build, registry=registry)


def test_assert_patched_of_an_unregistered_target_fails(target_module: ModuleType) -> None:
    with pytest.raises(AssertionError, match="has nothing registered for it"):
        assert_patched(f"{target_module.__name__}.compute", registry=PatchRegistry("empty"))


def test_assert_not_patched_names_the_provider_and_site(target_module: ModuleType) -> None:
    registry = PatchRegistry("testing")
    target = f"{target_module.__name__}.compute"
    with registry.provider("mine"):
        registry.register(target, _replacement)
    assert_not_patched(target, registry=registry)
    with registry.applied():
        with pytest.raises(AssertionError, match=rf"is patched by provider 'mine' \(registered at {__file__}:\d+\)"
                                                 r": installed is .*_replacement"):
            assert_not_patched(target, registry=registry)
    assert_not_patched(target, registry=registry)
