from __future__ import annotations

import sys

import pytest

from mindspeed_ms.engine.targets import locate, parse_target, resolve_target
from mindspeed_ms.errors import PatchValidationError, TargetNotFoundError


@pytest.mark.parametrize("bad", ["", ".a", "a.", "a..b", "a.1b", "a.class", "a.b-c", "a b"])
def test_parse_target_rejects_malformed_paths(bad):
    with pytest.raises(PatchValidationError) as info:
        parse_target(bad)
    assert info.value.target == bad
    assert repr(bad) in str(info.value) or bad == ""


@pytest.mark.parametrize("bad", [None, 3, b"a.b", ["a", "b"]])
def test_parse_target_rejects_non_strings(bad):
    with pytest.raises(PatchValidationError, match="dotted path string"):
        parse_target(bad)


def test_parse_target_splits_parts():
    assert parse_target("pkg.mod.Outer.Inner.meth") == ("pkg", "mod", "Outer", "Inner", "meth")


def test_locate_waits_for_an_unimported_module_without_importing_it(modules):
    modules.write("lazy_pkg.sub", "def f(): pass\n")
    located = locate("lazy_pkg.sub.f")
    assert located.waiting_for == "lazy_pkg.sub"  # the deepest module, found statically
    assert "lazy_pkg" not in sys.modules


def test_locate_waits_for_an_unimported_submodule_of_an_imported_package(modules):
    modules.write("pkg_a.sub", "def f(): pass\n")
    modules.load("pkg_a")
    located = locate("pkg_a.sub.f")
    assert located.waiting_for == "pkg_a.sub"
    assert "pkg_a.sub" not in sys.modules


def test_locate_reads_class_attributes_through_vars_along_the_mro(modules):
    mod = modules.load("mro_mod", """
        class Base:
            @staticmethod
            def s(): return 1
        class Child(Base):
            pass
    """)
    located = locate("mro_mod.Child.s")
    assert isinstance(located.raw, staticmethod)
    assert located.owner is mod.Child
    assert located.defined_on is mod.Base


def test_locate_missing_top_level_module_is_not_found():
    with pytest.raises(TargetNotFoundError) as info:
        locate("no_such_top_level_module_xyz.f")
    assert info.value.missing == "no_such_top_level_module_xyz"
    assert info.value.resolved == ""


def test_resolve_target_imports_and_suggests_close_matches(modules):
    modules.write("res_mod", "def compute_loss(): pass\n")
    with pytest.raises(TargetNotFoundError) as info:
        resolve_target("res_mod.compute_los")
    assert info.value.suggestions == ("compute_loss",)
    assert "'compute_loss'" in str(info.value)
    assert "'res_mod'" in str(info.value)
    assert resolve_target("res_mod.compute_loss").raw.__name__ == "compute_loss"


def test_resolve_target_reports_missing_submodule(modules):
    modules.write("res_pkg.real", "x = 1\n")
    with pytest.raises(TargetNotFoundError) as info:
        resolve_target("res_pkg.reel.x")
    assert info.value.missing == "reel"
    assert info.value.resolved == "res_pkg"
    assert "real" in info.value.suggestions


def test_a_module_subclass_forwarding_through_a_class_getattr_is_resolved_and_reverted() -> None:
    # MSAdapter's `torch`, `torch.distributed`, ... are such proxies: their names live behind the class's __getattr__
    import types

    from mindspeed_ms import PatchRegistry

    def original() -> str:
        return "original"

    class Proxy(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            if name == "compile":
                return original
            raise AttributeError(name)

    proxy = Proxy("proxy_module_for_targets_test")
    sys.modules[proxy.__name__] = proxy
    registry = PatchRegistry(name="proxy")
    try:
        registry.register(f"{proxy.__name__}.compile", lambda: "patched")
        registry.apply()
        assert proxy.compile() == "patched"
        assert registry.status()[0].state == "applied"
        registry.revert()
        assert proxy.compile is original
        assert "compile" not in vars(proxy)
    finally:
        registry.revert()
        del sys.modules[proxy.__name__]
