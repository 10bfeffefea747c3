"""MindSpeed's patch-manager API on the engine (:mod:`mindspeed_ms.patch_manager`).

Each test binds a manager class to a fresh registry (``bind_manager(reg)``) and patches throwaway
modules; the registry's revert in the fixture teardown puts everything back.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from mindspeed_ms import PatchRegistry
from mindspeed_ms.adaptation.verify import verify_registry
from mindspeed_ms.errors import PatchConflictError, TargetNotFoundError
from mindspeed_ms.patch_manager import MindSpeedPatchesManager, Patch, WrapperNotFoundError, bind_manager

TARGET_SOURCE = """
def compute(x):
    return ("original", x)

class Model:
    def forward(self, x):
        return ("forward", x)

    @staticmethod
    def helper(x):
        return ("helper", x)

    class Inner:
        def run(self):
            return "inner"
"""


def replacement(x: Any) -> Any:
    return ("replaced", x)


def other_replacement(x: Any) -> Any:
    return ("other", x)


def trace_wrapper(fn: Any) -> Any:
    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        return ("traced", fn(*args, **kwargs))

    return traced


def second_wrapper(fn: Any) -> Any:
    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        return ("second", fn(*args, **kwargs))

    return inner


def forward_replacement(self: Any, x: Any) -> Any:
    return ("replaced", x)


def staticish(x: Any) -> Any:
    return ("new helper", x)


@pytest.fixture
def target(modules: Any) -> Any:
    return modules.load("pm_target", TARGET_SOURCE)


@pytest.fixture
def manager(reg: PatchRegistry) -> Any:
    return bind_manager(reg)


def test_register_patch_is_data_and_apply_patches_installs(target: Any, manager: Any, reg: PatchRegistry) -> None:
    manager.register_patch("pm_target.compute", replacement)
    assert target.compute(1) == ("original", 1)
    patch = manager.patches_info["pm_target.compute"]
    assert not patch.is_applied
    assert patch.patch_func is replacement
    assert patch.orig_func is None
    manager.apply_patches()
    assert target.compute(1) == ("replaced", 1)
    assert patch.is_applied
    assert patch.final_patch_func is replacement
    assert patch.orig_func(1) == ("original", 1)
    assert patch.orig_module is target
    [status] = reg.status()
    assert (status.state, status.provider) == ("applied", "mindspeed.patch_utils")
    assert status.registered_at.startswith(__file__)


def test_registration_site_is_the_callers_line_not_the_facade(manager: Any, reg: PatchRegistry,
                                                              target: Any) -> None:
    import inspect

    line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]  # a frame exists in CPython
    manager.register_patch("pm_target.compute", replacement)
    assert reg.status()[0].registered_at == f"{__file__}:{line}"


def test_names_ending_in_wrapper_stack_as_wraps_over_the_replacement(target: Any, manager: Any) -> None:
    manager.register_patch("pm_target.compute", trace_wrapper)
    manager.register_patch("pm_target.compute", replacement)
    manager.register_patch("pm_target.compute", second_wrapper)
    patch = manager.patches_info["pm_target.compute"]
    assert list(patch.wrappers) == [trace_wrapper, second_wrapper]
    manager.apply_patches()
    assert target.compute(2) == ("second", ("traced", ("replaced", 2)))


def test_second_replacement_needs_force_patch(target: Any, manager: Any) -> None:
    manager.register_patch("pm_target.compute", replacement)
    with pytest.raises(PatchConflictError):
        manager.register_patch("pm_target.compute", other_replacement)
    manager.register_patch("pm_target.compute", other_replacement, force_patch=True)
    manager.apply_patches()
    assert target.compute(3) == ("other", 3)


def test_subclass_overriding_register_patch_with_check_patch(target: Any, reg: PatchRegistry,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    base = bind_manager(reg)

    class Adaptation(base):  # type: ignore[misc, valid-type]  # a class made by bind_manager
        @staticmethod
        def register_patch(orig_func_name: str, new_func: Any = None, force_patch: bool = True,
                           create_dummy: bool = False, check_patch: bool = False) -> None:
            if check_patch:
                original = new_func

                @functools.wraps(original)
                def logged(*args: Any, **kwargs: Any) -> Any:
                    print(f"Stepping into MindSpore patch: {original.__name__}")
                    return original(*args, **kwargs)

                new_func = logged
            base.register_patch(orig_func_name, new_func, force_patch, create_dummy)

    Adaptation.register_patch("pm_target.compute", replacement, check_patch=True)
    Adaptation.register_patch("pm_target.compute", other_replacement)  # force_patch=True is the subclass default
    Adaptation.register_patch("pm_target.Model.forward", forward_replacement, check_patch=True)
    assert Adaptation.patches_info is base.patches_info
    Adaptation.apply_patches()
    assert target.compute(4) == ("other", 4)
    assert target.Model().forward(5) == ("replaced", 5)
    assert "Stepping into MindSpore patch: forward_replacement" in capsys.readouterr().out
    # the site is the line calling the subclass, not the forwarding staticmethod
    assert all(s.registered_at.startswith(__file__) and "register_patch" not in s.registered_at
               for s in reg.status())
    sites = {s.registered_at for s in reg.status()}
    assert len(sites) == 2


def test_patches_info_apply_patch_installs_one_target_before_the_others(target: Any, manager: Any,
                                                                         reg: PatchRegistry) -> None:
    manager.register_patch("pm_target.compute", replacement)
    manager.register_patch("pm_target.Model.forward", forward_replacement)
    manager.patches_info["pm_target.compute"].apply_patch()
    assert target.compute(1) == ("replaced", 1)
    assert target.Model().forward(1) == ("forward", 1)
    assert {s.target: s.state for s in reg.status()} == {"pm_target.compute": "applied",
                                                         "pm_target.Model.forward": "registered"}
    manager.apply_patches()
    assert target.Model().forward(1) == ("replaced", 1)
    reg.revert()
    assert target.compute(1) == ("original", 1)
    assert target.Model().forward(1) == ("forward", 1)


def test_remove_wrappers_then_apply_again(target: Any, manager: Any) -> None:
    manager.register_patch("pm_target.compute", trace_wrapper)
    manager.register_patch("pm_target.compute", second_wrapper)
    manager.apply_patches()
    assert target.compute(1) == ("second", ("traced", ("original", 1)))
    manager.remove_wrappers("pm_target.compute", "trace_wrapper")
    assert [w.__name__ for w in manager.patches_info["pm_target.compute"].wrappers] == ["second_wrapper"]
    manager.apply_patches()
    assert target.compute(1) == ("second", ("original", 1))
    with pytest.raises(WrapperNotFoundError, match="removed nothing"):
        manager.remove_wrappers("pm_target.compute", "trace_wrapper")
    manager.remove_wrappers("pm_target.compute", "trace_wrapper", remove_check=False)
    with pytest.raises(TargetNotFoundError, match="did you mean 'pm_target.compute'"):
        manager.remove_wrappers("pm_target.comput", "trace_wrapper")


def test_wrappers_assignment_clears_them_as_mindspeed_llm_utils_do(target: Any, manager: Any) -> None:
    manager.register_patch("pm_target.compute", replacement)
    manager.register_patch("pm_target.compute", trace_wrapper)
    manager.patches_info["pm_target.compute"].wrappers = []
    assert list(manager.patches_info["pm_target.compute"].wrappers) == []
    manager.apply_patches()
    assert target.compute(1) == ("replaced", 1)
    patch = manager.patches_info["pm_target.compute"]
    patch.wrappers.append(second_wrapper)
    manager.apply_patches()
    assert target.compute(1) == ("second", ("replaced", 1))


def test_set_patch_func_and_remove_patch_keep_wrappers(target: Any, manager: Any) -> None:
    manager.register_patch("pm_target.compute", trace_wrapper)
    patch = manager.patches_info["pm_target.compute"]
    patch.set_patch_func(replacement)
    manager.apply_patches()
    assert target.compute(1) == ("traced", ("replaced", 1))
    patch.remove_patch()
    assert target.compute(1) == ("original", 1)
    assert patch.patch_func is None
    assert list(patch.wrappers) == [trace_wrapper]
    assert not patch.is_applied
    patch.apply_patch()
    assert target.compute(1) == ("traced", ("original", 1))


def test_remove_patches_reverts_exactly_and_leaves_other_registrations(target: Any, manager: Any,
                                                                         reg: PatchRegistry) -> None:
    reg.register("pm_target.Model.forward", forward_replacement)  # ours, not the manager's
    original_helper = vars(target.Model)["helper"]
    manager.register_patch("pm_target.compute", replacement)
    manager.register_patch("pm_target.Model.helper", staticish)
    manager.apply_patches()
    assert isinstance(vars(target.Model)["helper"], staticmethod)  # MindSpeed would drop the staticmethod
    assert target.Model().helper(1) == ("new helper", 1)
    manager.remove_patches()
    assert target.compute(1) == ("original", 1)
    assert vars(target.Model)["helper"] is original_helper
    assert [p.target for p in reg.patches()] == ["pm_target.Model.forward"]
    assert target.Model().forward(1) == ("replaced", 1)


def test_patches_info_lists_every_registered_target_and_del_unregisters(target: Any, manager: Any,
                                                                       reg: PatchRegistry) -> None:
    reg.register("pm_target.Model.forward", forward_replacement)
    manager.register_patch("pm_target.compute", replacement)
    assert sorted(manager.patches_info) == ["pm_target.Model.forward", "pm_target.compute"]
    assert manager.patches_info.get("pm_target.nothing") is None
    del manager.patches_info["pm_target.compute"]
    assert "pm_target.compute" not in reg
    with pytest.raises(TypeError, match="register_patch"):
        manager.patches_info["pm_target.compute"] = Patch


def test_typo_is_an_error_not_a_created_attribute(target: Any, manager: Any, reg: PatchRegistry) -> None:
    from mindspeed_ms.errors import PatchApplyError

    manager.register_patch("pm_target.compte", replacement)
    with pytest.raises(PatchApplyError):
        manager.apply_patches()
    assert not hasattr(target, "compte")
    [check] = verify_registry(reg)
    assert check.state == "missing"
    assert check.suggestions == ("compute",)


def brand_new(x: Any) -> Any:
    return ("added", x)


def test_a_function_registered_under_its_own_name_is_added_as_mindspeed_adds_it(target: Any, manager: Any,
                                                                                 reg: PatchRegistry) -> None:
    """MindSpeed's context parallelism adds ``parallel_state.get_context_parallel_group_for_send_recv_overlap`` so."""
    manager.register_patch("pm_target.brand_new", brand_new)
    manager.apply_patches()
    assert target.brand_new(1) == ("added", 1)
    [status] = reg.status()
    assert status.stub
    assert status.state == "applied"
    reg.revert()
    assert not hasattr(target, "brand_new")


def test_a_missing_name_that_is_not_the_functions_own_stays_an_error(target: Any, manager: Any) -> None:
    from mindspeed_ms.errors import PatchApplyError

    manager.register_patch("pm_target.brand_new", replacement)
    manager.register_patch("pm_target.Model.brand_new", brand_new)  # a class: MindSpeed refuses it too
    with pytest.raises(PatchApplyError):
        manager.apply_patches()
    assert not hasattr(target, "brand_new")
    assert not hasattr(target.Model, "brand_new")


def test_create_dummy_adds_the_attribute_on_purpose_and_shows_it(target: Any, manager: Any,
                                                                 reg: PatchRegistry) -> None:
    manager.register_patch("pm_target.brand_new", replacement, create_dummy=True)
    manager.apply_patches()
    assert target.brand_new(1) == ("replaced", 1)
    [status] = reg.status()
    assert status.stub
    assert status.state == "applied"
    reg.revert()
    assert not hasattr(target, "brand_new")


def test_nested_class_attribute_is_patched(target: Any, manager: Any) -> None:
    def run(self: Any) -> str:
        return "patched inner"

    manager.register_patch("pm_target.Model.Inner.run", run)
    manager.apply_patches()
    assert target.Model.Inner().run() == "patched inner"


def test_lazy_reference_registers_without_importing(manager: Any, modules: Any, reg: PatchRegistry) -> None:
    import sys

    modules.load("pm_target", TARGET_SOURCE)
    modules.write("pm_lazy_impl", "def compute(x):\n    return ('lazy', x)\n")
    manager.register_patch("pm_target.compute", "pm_lazy_impl:compute")
    assert "pm_lazy_impl" not in sys.modules
    assert manager.patches_info["pm_target.compute"].patch_func == "pm_lazy_impl:compute"
    manager.apply_patches()
    assert sys.modules["pm_target"].compute(1) == ("lazy", 1)
    assert manager.patches_info["pm_target.compute"].patch_func is sys.modules["pm_lazy_impl"].compute


def test_parse_path_reads_modules_and_classes_like_mindspeed(target: Any) -> None:
    assert Patch.parse_path("pm_target", "compute", False) == (target, target.compute)
    owner, helper = Patch.parse_path("pm_target.Model", "helper", False)
    assert owner is target.Model
    assert helper(1) == ("helper", 1)
    assert Patch.parse_path("pm_target", None, False) == (target, None)
    with pytest.raises(TargetNotFoundError, match="did you mean 'compute'"):
        Patch.parse_path("pm_target", "compte", False)
    owner, dummy = Patch.parse_path("pm_target", "compte", True)
    assert owner is target
    assert not hasattr(target, "compte")
    with pytest.raises(NotImplementedError):
        dummy()


def test_default_manager_fills_the_registry_a_provider_is_filling(target: Any, reg: PatchRegistry) -> None:
    with reg.provider("downstream"):
        MindSpeedPatchesManager.register_patch("pm_target.compute", replacement)
        MindSpeedPatchesManager.patches_info["pm_target.compute"].apply_patch()  # providers only register
    [status] = reg.status()
    assert (status.provider, status.state) == ("downstream", "registered")
    assert target.compute(1) == ("original", 1)


def test_forced_replacement_of_an_armed_target_is_what_goes_in_on_import(manager: Any, modules: Any,
                                                                         reg: PatchRegistry) -> None:
    import importlib

    modules.write("pm_late", TARGET_SOURCE)
    reg.register("pm_late.compute", replacement)  # a built-in provider's, armed before the module loads
    reg.apply()
    manager.register_patch("pm_late.compute", other_replacement, force_patch=True)  # the downstream's
    manager.apply_patches()
    assert importlib.import_module("pm_late").compute(1) == ("other", 1)


def test_foreign_setattr_after_apply_is_reported_as_overwritten(target: Any, manager: Any,
                                                                reg: PatchRegistry) -> None:
    manager.register_patch("pm_target.compute", replacement)
    manager.register_patch("pm_target.Model.forward", forward_replacement)
    manager.apply_patches()
    assert {s.state for s in reg.status()} == {"applied"}

    def someone_elses(x: Any) -> Any:
        return ("someone else", x)

    target.compute = someone_elses  # e.g. MindSpeed's own manager patching after ours
    states = {s.target: (s.state, s.reason) for s in reg.status()}
    state, reason = states["pm_target.compute"]
    assert state == "overwritten"
    assert "someone_elses" in (reason or "")
    assert states["pm_target.Model.forward"][0] == "applied"
    assert reg.report().counts["overwritten"] == 1
    assert "1 overwritten" in reg.report().summary()
    [check] = [c for c in verify_registry(reg) if c.target == "pm_target.compute"]
    assert check.state == "overwritten"
    assert check.is_failure


def test_a_second_registry_stacked_on_ours_is_not_drift(target: Any, manager: Any, reg: PatchRegistry,
                                                        make_registry: Any) -> None:
    manager.register_patch("pm_target.compute", replacement)
    manager.apply_patches()
    other = make_registry("other")
    other.register("pm_target.compute", other_replacement)
    other.apply()
    assert [s.state for s in reg.status()] == ["applied"]
    assert target.compute(1) == ("other", 1)


def test_lazy_reference_with_a_typo_is_missing_at_verify_and_failed_at_apply(manager: Any, modules: Any,
                                                                             reg: PatchRegistry) -> None:
    import importlib

    modules.write("pm_typo_target", TARGET_SOURCE)
    modules.write("pm_typo_impl", "def compute(x):\n    return ('lazy', x)\n")
    manager.register_patch("pm_typo_target.compute", "pm_typo_impl:compte")
    for static in (True, False):
        [check] = verify_registry(reg, static=static)
        assert check.state == "missing", static
        assert check.suggestions == ("compute",), static
        assert "'pm_typo_impl:compte'" in (check.reason or "")
    reg.revert()
    import sys

    for name in ("pm_typo_target", "pm_typo_impl"):
        sys.modules.pop(name, None)
    manager.apply_patches()  # the target is not imported yet: armed
    module = importlib.import_module("pm_typo_target")
    [status] = reg.status()
    assert status.state == "failed"
    assert "compte" in (status.reason or "")
    assert module.compute(1) == ("original", 1)
