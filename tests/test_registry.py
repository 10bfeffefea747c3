"""Registration, conflicts, validation, kinds, status and the basic apply/revert cycle."""

from __future__ import annotations

import json
import sys
import threading

import pytest

from mindspeed_ms import ApplyReport, PatchRegistry, PatchStatus
from mindspeed_ms.engine.registry import filling, registry_being_filled
from mindspeed_ms.errors import (
    AdaptationError,
    PatchApplyError,
    PatchConflictError,
    PatchValidationError,
    SignatureMismatchError,
    TargetNotFoundError,
)

SOURCE = """
def func(a, b=2):
    return ("orig", a, b)

class Klass:
    def method(self, x):
        return ("orig-method", x)

    class Inner:
        class Deeper:
            def meth(self):
                return "orig-deep"
"""


def replacement(a, b=2):
    return ("new", a, b)


def test_registering_imports_nothing(reg, modules):
    modules.write("not_yet", SOURCE)
    reg.register("not_yet.func", replacement)
    reg.register("not_yet.Klass.method", lambda self, x: x)
    assert "not_yet" not in sys.modules


def test_register_returns_one_record_per_target(reg):
    first = reg.register("json.dumps", replacement)

    def extra_wrapper(fn):
        return fn

    second = reg.register("json.dumps", extra_wrapper)
    assert first is second
    assert first.kinds == ("replace", "wrap")
    assert len(reg) == 1


def test_replace_function_and_revert_restores_identity(reg, modules):
    mod = modules.load("m_func", SOURCE)
    original = mod.func
    reg.register("m_func.func", replacement)
    report = reg.apply()
    assert mod.func is replacement
    assert report.applied == 1
    reg.revert()
    assert mod.func is original


def test_nested_class_target_any_depth(reg, modules):
    mod = modules.load("m_nested", SOURCE)
    reg.register("m_nested.Klass.Inner.Deeper.meth", lambda self: "new-deep")
    reg.apply()
    assert mod.Klass.Inner.Deeper().meth() == "new-deep"
    reg.revert()
    assert mod.Klass.Inner.Deeper().meth() == "orig-deep"


def test_class_replaced_as_a_whole(reg, modules):
    mod = modules.load("m_class", SOURCE)
    original = mod.Klass

    class NewKlass:
        pass

    reg.register("m_class.Klass", NewKlass)
    reg.apply()
    assert mod.Klass is NewKlass
    reg.revert()
    assert mod.Klass is original


def test_module_target_replaced_in_sys_modules_and_parent(reg, modules):
    modules.write("m_pkg.sub", "value = 'orig'\n")
    import types

    import m_pkg.sub as original  # noqa: F401 - imported for the identity check
    fake = types.ModuleType("m_pkg.sub")
    fake.value = "fake"
    reg.register("m_pkg.sub", fake)
    reg.apply()
    assert sys.modules["m_pkg.sub"] is fake
    assert sys.modules["m_pkg"].sub is fake
    reg.revert()
    assert sys.modules["m_pkg.sub"] is original
    assert sys.modules["m_pkg"].sub is original


def test_module_target_needs_a_module_replacement(reg, modules):
    modules.load("m_pkg2.sub", "x = 1\n")
    reg.register("m_pkg2.sub", replacement)
    with pytest.raises(PatchApplyError, match="must be a module"):
        reg.apply()


def test_wraps_stack_in_registration_order_first_innermost(reg, modules):
    mod = modules.load("m_wrap", SOURCE)
    calls = []

    def make(tag):
        def tag_wrapper(fn):
            def inner(*args, **kwargs):
                calls.append(tag)
                return fn(*args, **kwargs)
            return inner
        return tag_wrapper

    first, second = make("first"), make("second")
    reg.register("m_wrap.func", first)
    reg.register("m_wrap.func", replacement)
    reg.register("m_wrap.func", second)
    reg.apply()
    assert mod.func(1) == ("new", 1, 2)
    assert calls == ["second", "first"]  # outermost runs first


def test_wrap_without_replacement_wraps_the_original(reg, modules):
    mod = modules.load("m_wrap2", SOURCE)

    def tracing_decorator(fn):
        return lambda *a, **k: ("wrapped", fn(*a, **k))

    reg.register("m_wrap2.func", tracing_decorator)
    assert reg.status()[0].kinds == ("wrap",)
    reg.apply()
    assert mod.func(1) == ("wrapped", ("orig", 1, 2))


def test_same_wrap_twice_is_a_no_op(reg, modules):
    mod = modules.load("m_wrap3", SOURCE)

    def double_wrapper(fn):
        return lambda *a, **k: fn(*a, **k) * 2

    reg.register("m_wrap3.func", double_wrapper)
    reg.register("m_wrap3.func", double_wrapper)
    reg.apply()
    assert mod.func(1) == ("orig", 1, 2) * 2


def test_explicit_kind_overrides_the_name_rule(reg, modules):
    mod = modules.load("m_kind", SOURCE)

    def add_wrapper(a, b=2):  # named like a wrapper, but really a replacement
        return "replaced"

    reg.register("m_kind.func", add_wrapper, kind="replace")
    reg.apply()
    assert mod.func(1) == "replaced"


def test_placeholder_raises_not_implemented_naming_the_target(reg, modules):
    mod = modules.load("m_ph", SOURCE)
    reg.register("m_ph.func")
    reg.apply()
    with pytest.raises(NotImplementedError, match="m_ph.func"):
        mod.func(1)


def test_conflict_names_both_registration_sites(reg):
    reg.register("json.dumps", replacement)

    def other(*a, **k):
        return None

    with pytest.raises(PatchConflictError) as info:
        reg.register("json.dumps", other)
    message = str(info.value)
    assert message.count("test_registry.py:") == 2
    assert len(info.value.sites) == 2
    assert info.value.sites[0] != info.value.sites[1]
    assert reg.status()[0].replacement.endswith("replacement")


def test_force_patch_replaces_and_keeps_wraps(reg, modules):
    mod = modules.load("m_force", SOURCE)

    def keep_wrapper(fn):
        return lambda *a, **k: ("kept", fn(*a, **k))

    def newer(a, b=2):
        return "newer"

    reg.register("m_force.func", replacement)
    reg.register("m_force.func", keep_wrapper)
    reg.register("m_force.func", newer, force_patch=True)
    reg.apply()
    assert mod.func(1) == ("kept", "newer")


@pytest.mark.parametrize("kwargs, match", [
    ({"kind": "monkey"}, "kind 'monkey'"),
    ({"kind": "wrap", "new_func": None}, "decorator"),
    ({"requires": "megatron core>=1"}, "PEP 508"),
    ({"requires": [3]}, "PEP 508 string"),
])
def test_validation_errors_leave_the_registry_unchanged(reg, kwargs, match):
    new_func = kwargs.pop("new_func", replacement)
    with pytest.raises(PatchValidationError, match=match) as info:
        reg.register("json.dumps", new_func, **kwargs)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, AdaptationError)
    assert len(reg) == 0


def test_non_callable_replacement_for_callable_target_is_rejected(reg):
    with pytest.raises(PatchValidationError, match="not"):
        reg.register("json.dumps", 42)
    assert len(reg) == 0


def test_malformed_target_is_rejected(reg):
    with pytest.raises(PatchValidationError):
        reg.register("json..dumps", replacement)
    assert len(reg) == 0


def test_missing_attribute_fails_apply_with_suggestions_and_changes_nothing(reg, modules):
    mod = modules.load("m_typo", SOURCE)
    original = mod.func
    reg.register("m_typo.func", replacement)
    reg.register("m_typo.Klass.methd", replacement)
    with pytest.raises(PatchApplyError) as info:
        reg.apply()
    cause = info.value.__cause__
    assert isinstance(cause, TargetNotFoundError)
    assert isinstance(cause, LookupError)
    assert cause.suggestions == ("method",)
    assert cause.resolved == "m_typo.Klass"
    assert "'method'" in str(info.value)
    assert info.value.target == "m_typo.Klass.methd"
    assert mod.func is original
    assert not hasattr(mod.Klass, "methd")


def test_missing_top_level_module_fails_apply(reg):
    reg.register("definitely_not_a_module_qq.func", replacement)
    with pytest.raises(PatchApplyError) as info:
        reg.apply()
    assert isinstance(info.value.__cause__, TargetNotFoundError)
    assert not reg.is_applied


def test_registration_after_apply_takes_effect_at_next_apply(reg, modules):
    mod = modules.load("m_late", SOURCE)
    reg.apply()
    reg.register("m_late.func", replacement)
    assert mod.func is not replacement
    reg.apply()
    assert mod.func is replacement


def test_unregister_applied_patch_reverts_it_at_once(reg, modules):
    mod = modules.load("m_unreg", SOURCE)
    original = mod.func
    reg.register("m_unreg.func", replacement)
    reg.apply()
    reg.unregister("m_unreg.func")
    assert mod.func is original
    assert "m_unreg.func" not in reg


def test_unregister_one_wrap_keeps_the_rest_for_next_apply(reg, modules):
    mod = modules.load("m_unreg2", SOURCE)

    def a_wrapper(fn):
        return lambda *x, **k: ("a", fn(*x, **k))

    reg.register("m_unreg2.func", replacement)
    reg.register("m_unreg2.func", a_wrapper)
    reg.apply()
    reg.unregister("m_unreg2.func", a_wrapper)
    assert mod.func is not replacement
    assert mod.func(1) == ("orig", 1, 2)
    assert reg.status()[0].state == "registered"
    reg.apply()
    assert mod.func is replacement


def test_unregister_unknown_target_suggests(reg):
    reg.register("json.dumps", replacement)
    with pytest.raises(TargetNotFoundError, match="json.dumps"):
        reg.unregister("json.dump")


def test_status_fields_and_report_to_dict(reg, modules):
    modules.load("m_status", SOURCE)
    modules.write("m_status_lazy", SOURCE)
    reg.register("m_status.func", replacement, purpose="because")
    reg.register("m_status_lazy.func", replacement)
    reg.register("m_status.Klass.method", replacement, requires="no-such-distribution-zz>=1")
    report = reg.apply()
    assert isinstance(report, ApplyReport)
    by_target = {s.target: s for s in reg.status()}
    applied = by_target["m_status.func"]
    assert isinstance(applied, PatchStatus)
    assert applied.state == "applied"
    assert applied.purpose == "because"
    assert applied.replacement == f"{__name__}.replacement"
    assert applied.registered_at.startswith(__file__)
    assert applied.sources == (applied.registered_at,)
    assert by_target["m_status_lazy.func"].state == "pending-import"
    skipped = by_target["m_status.Klass.method"]
    assert skipped.state == "skipped"
    assert "no-such-distribution-zz is not installed" in skipped.reason
    assert (report.applied, report.pending, report.skipped, report.failed) == (1, 1, 1, 0)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["counts"]["applied"] == 1
    assert len(data["patches"]) == 3
    with pytest.raises(AttributeError):
        applied.state = "x"  # frozen


def test_requires_in_range_applies(reg, modules):
    mod = modules.load("m_req", SOURCE)
    reg.register("m_req.func", replacement, requires="wrapt>=2,<3")
    reg.apply()
    assert mod.func is replacement


def test_requires_out_of_range_is_skipped_with_reason(reg, modules):
    mod = modules.load("m_req2", SOURCE)
    reg.register("m_req2.func", replacement, requires="wrapt<1")
    reg.apply()
    status = reg.status()[0]
    assert status.state == "skipped"
    assert "wrapt" in status.reason
    assert "'wrapt<1'" in status.reason
    assert mod.func is not replacement


def test_signature_mismatch_is_a_warning(reg, modules):
    modules.load("m_sig", SOURCE)
    reg.register("m_sig.func", lambda a: a)
    reg.apply()
    warnings = reg.status()[0].warnings
    assert warnings
    assert "'b'" in " ".join(warnings)


def test_signature_mismatch_is_an_error_when_strict(make_registry, modules):
    mod = modules.load("m_sig2", SOURCE)
    original = mod.func
    strict = make_registry("strict", strict=True)
    strict.register("m_sig2.func", lambda a: a)
    with pytest.raises(PatchApplyError) as info:
        strict.apply()
    assert isinstance(info.value.__cause__, SignatureMismatchError)
    assert isinstance(info.value.__cause__, TypeError)
    assert mod.func is original


def test_signature_check_skips_c_functions(reg, modules):
    modules.load("m_sigc", "from math import sqrt\n")
    reg.register("m_sigc.sqrt", lambda x: x)
    reg.apply()
    assert reg.status()[0].warnings == ()


def test_applied_context_reverts_on_exception(reg, modules):
    mod = modules.load("m_ctx", SOURCE)
    original = mod.func
    reg.register("m_ctx.func", replacement)
    with pytest.raises(ZeroDivisionError):
        with reg.applied():
            assert mod.func is replacement
            raise ZeroDivisionError
    assert mod.func is original


def test_provider_scope_withdraws_its_registrations_on_error(reg):
    reg.register("json.dumps", replacement)
    with pytest.raises(RuntimeError):
        with reg.provider("broken"):
            reg.register("json.loads", replacement)
            reg.register("json.dumps", replacement, force_patch=False)

            def extra_wrapper(fn):
                return fn

            reg.register("json.dumps", extra_wrapper)
            raise RuntimeError("provider failed")
    assert [s.target for s in reg.status()] == ["json.dumps"]
    assert reg.status()[0].kinds == ("replace",)


def test_provider_scope_names_the_provider(reg):
    with reg.provider("mine"):
        reg.register("json.dumps", replacement)
    assert reg.status()[0].provider == "mine"


def test_registry_being_filled_is_the_innermost_block_and_the_outer_one_after_it(reg, make_registry):
    inner = make_registry("inner")
    assert registry_being_filled() is None
    with reg.provider("outer"):
        with filling(inner):
            assert registry_being_filled() is inner
        assert registry_being_filled() is reg
    assert registry_being_filled() is None


def test_registry_being_filled_is_not_seen_by_another_thread(reg):
    seen = []
    with reg.provider("mine"):
        thread = threading.Thread(target=lambda: seen.append(registry_being_filled()))
        thread.start()
        thread.join()
    assert seen == [None]


def test_registry_being_filled_is_restored_when_the_provider_block_raises(reg):
    with pytest.raises(ZeroDivisionError), reg.provider("broken"):
        raise ZeroDivisionError
    assert registry_being_filled() is None


def _register_for_my_caller(reg):
    reg.register("json.dumps", replacement, stacklevel=2)


def test_a_helper_registering_for_its_caller_names_its_callers_line_with_stacklevel(reg):
    import inspect

    line = inspect.currentframe().f_lineno + 1
    _register_for_my_caller(reg)
    assert reg.status()[0].registered_at == f"{__file__}:{line}"


def test_a_block_names_the_line_asking_for_it(reg):
    import inspect

    line = inspect.currentframe().f_lineno + 1
    reg.block("no_such_module_zz_block")
    assert reg.status()[0].registered_at == f"{__file__}:{line}"


def test_trace_counts_calls(make_registry, modules):
    mod = modules.load("m_trace", SOURCE)
    traced = make_registry("traced", trace=True)
    traced.register("m_trace.func", replacement)
    traced.apply()
    assert mod.func is not replacement
    assert mod.func.__wrapped__ is replacement
    mod.func(1)
    mod.func(2)
    assert traced.status()[0].calls == 2


def test_untraced_installed_object_is_the_replacement(reg, modules):
    mod = modules.load("m_notrace", SOURCE)
    reg.register("m_notrace.func", replacement)
    reg.apply()
    assert mod.func is replacement
    assert reg.status()[0].calls is None


def test_registry_state_is_per_instance(make_registry):
    one, two = make_registry("one"), make_registry("two")
    one.register("json.dumps", replacement)
    assert len(two) == 0
    assert isinstance(two, PatchRegistry)


def test_trace_shim_keeps_method_binding_and_descriptor_kind(make_registry, modules):
    mod = modules.load("m_trace2", """
        class K:
            def meth(self, x):
                return ("orig", x)

            @staticmethod
            def stat(x):
                return x
    """)
    traced = make_registry("traced2", trace=True)
    traced.register("m_trace2.K.meth", lambda self, x: ("new", x))
    traced.register("m_trace2.K.stat", lambda x: -x)
    traced.apply()
    assert mod.K().meth(3) == ("new", 3)
    assert isinstance(vars(mod.K)["stat"], staticmethod)
    assert mod.K.stat(2) == -2
    assert [s.calls for s in traced.status()] == [1, 1]


def test_log_calls_logs_each_call(reg, modules, caplog):
    mod = modules.load("m_logcalls", SOURCE)
    reg.register("m_logcalls.func", replacement, log_calls=True)
    reg.apply()
    with caplog.at_level("INFO", logger="mindspeed_ms"):
        mod.func(1)
    assert any("m_logcalls.func" in r.getMessage() for r in caplog.records)
    assert reg.status()[0].calls == 1


def test_withdraw_provider_removes_exactly_its_registrations(reg, modules):
    mod = modules.load("m_withdraw", SOURCE)

    def user_wrapper(fn):
        return lambda *a, **k: ("user", fn(*a, **k))

    with reg.provider("prov"):
        reg.register("m_withdraw.func", replacement)
        reg.register("m_withdraw.Klass.method", lambda self, x: "prov")
    reg.register("m_withdraw.func", user_wrapper)
    reg.apply()
    assert mod.func(1) == ("user", ("new", 1, 2))
    touched = reg.withdraw_provider("prov")
    assert sorted(touched) == ["m_withdraw.Klass.method", "m_withdraw.func"]
    assert mod.Klass().method(1) == ("orig-method", 1)
    assert [s.target for s in reg.status()] == ["m_withdraw.func"]
    assert reg.status()[0].kinds == ("wrap",)
    assert reg.status()[0].provider is None
    reg.apply()
    assert mod.func(1) == ("user", ("orig", 1, 2))


def test_patches_returns_the_records_in_order(reg):
    first = reg.register("json.dumps", replacement)
    second = reg.block("xml.dom")
    assert reg.patches() == [first, second]
    assert second.is_block


def test_wrap_registered_after_apply_is_installed_by_the_next_apply(reg, modules):
    mod = modules.load("m_dirty", SOURCE)
    original = mod.func
    user = modules.load("m_dirty_user", "from m_dirty import func\n")

    def late_wrapper(fn):
        return lambda *a, **k: ("late", fn(*a, **k))

    reg.register("m_dirty.func", replacement)
    reg.apply()
    reg.register("m_dirty.func", late_wrapper)
    assert mod.func is replacement  # not before the next apply()
    reg.apply()
    assert mod.func(1) == ("late", ("new", 1, 2))
    assert user.func is mod.func
    reg.revert()
    assert mod.func is original
    assert user.func is original


def test_failed_reinstall_keeps_the_previous_installation(reg, modules):
    mod = modules.load("m_dirty2", SOURCE)

    def broken_wrapper(fn):
        raise RuntimeError("no")

    reg.register("m_dirty2.func", replacement)
    reg.apply()
    reg.register("m_dirty2.func", broken_wrapper)
    with pytest.raises(PatchApplyError):
        reg.apply()
    assert mod.func is replacement
    assert reg.status()[0].state == "applied"
    reg.unregister("m_dirty2.func", broken_wrapper)
    reg.revert()
    assert mod.func(1) == ("orig", 1, 2)


def test_a_reports_statuses_are_those_of_its_apply_whenever_they_are_read(make_registry, modules):
    # The report's statuses are built on their first read, from what the registry captured at apply(): a
    # later overwrite, calls, registrations, unregistrations and a revert change none of them.
    module = modules.load("m_snapshot", SOURCE)
    other = modules.load("m_snapshot_other", SOURCE)
    reg = make_registry("snapshot", trace=True)
    reg.register("m_snapshot.func", replacement, purpose="first")
    reg.register("m_snapshot_other.func", replacement)
    reg.register("m_snapshot.Klass.method", replacement, requires="no-such-distribution-zz>=1")
    report = reg.apply()
    then = tuple(reg.status())
    module.func(1)
    other.func = len  # someone else's setattr: the live status says overwritten, the report does not
    reg.register("m_snapshot.func", lambda a, b=2: a, force_patch=True, purpose="second")
    reg.unregister("m_snapshot.Klass.method")
    reg.register("m_snapshot.Klass", replacement)
    now = {status.target: status for status in reg.status()}
    assert now["m_snapshot_other.func"].state == "overwritten"
    assert now["m_snapshot.func"].calls == 1
    reg.revert()
    assert report.statuses == then
    assert [status.state for status in report.statuses] == ["applied", "applied", "skipped"]
    assert report.statuses[0].calls == 0
    assert report.statuses[0].purpose == "first"
    assert (report.applied, report.skipped, report.counts["overwritten"]) == (2, 1, 0)


def test_a_report_made_after_an_overwrite_keeps_it_when_the_slot_is_put_back(reg, modules):
    module = modules.load("m_snapshot_over", SOURCE)
    reg.register("m_snapshot_over.func", replacement)
    reg.apply()
    installed = module.func
    module.func = len
    report = reg.report()
    module.func = installed
    assert reg.status()[0].state == "applied"
    assert report.counts["overwritten"] == 1
    assert report.statuses[0].state == "overwritten"
    assert "it now holds builtins.len" in report.statuses[0].reason


def test_a_report_pickles_and_copies_with_its_statuses(reg, modules):
    import copy
    import pickle

    modules.load("m_report_pickle", SOURCE)
    reg.register("m_report_pickle.func", replacement)
    report = reg.apply()
    restored = pickle.loads(pickle.dumps(report))
    assert restored == report
    assert restored.statuses[0].state == "applied"
    assert copy.copy(report).statuses == report.statuses
