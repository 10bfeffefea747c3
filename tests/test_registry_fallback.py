"""PatchRegistry's fallback replacements: mindspeed_ms's built-in fixes give a target to anyone else's registration.

MindSpeed and MindSpeed-LLM register replacements for targets our built-in providers also fix on the
CPU (``_ParamAndGradBucketGroup.start_param_sync`` is the first the real MindSpeed-LLM 2.2.0 hits).
The policy: a built-in provider's replacement is a *fallback*; another registration of the same
target takes it without ``force_patch``, the fallback waits behind it (``PatchStatus.superseded``),
and takes the target back when that registration is withdrawn. Two non-fallback replacements still
conflict, and so do two fallbacks.
"""

from __future__ import annotations

import pytest

from mindspeed_ms.errors import PatchApplyError, PatchConflictError

SOURCE = """
def func(a):
    return ("orig", a)
"""


def ours(a):
    return ("ours", a)


def theirs(a):
    return ("theirs", a)


def third(a):
    return ("third", a)


def test_a_later_registration_takes_the_target_from_a_fallback_and_it_waits_visibly(reg, modules):
    mod = modules.load("fb_later", SOURCE)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_later.func", ours)
    with reg.provider("mindspeed.patch_utils"):
        reg.register("fb_later.func", theirs)  # no force_patch: no conflict
    reg.apply()
    assert mod.func(1) == ("theirs", 1)
    (status,) = reg.status()
    assert status.state == "applied"
    assert status.replacement.endswith("theirs")
    assert status.provider == "mindspeed.patch_utils"
    assert len(status.superseded) == 1
    assert "ours" in status.superseded[0]
    assert "'megatron_core'" in status.superseded[0]
    assert "1 built-in fix superseded" in reg.report().summary()
    reg.revert()
    assert mod.func(1) == ("orig", 1)


def test_a_fallback_registered_after_another_replacement_waits_behind_it(reg, modules):
    mod = modules.load("fb_after", SOURCE)
    reg.register("fb_after.func", theirs)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_after.func", ours)
    reg.apply()
    assert mod.func(2) == ("theirs", 2)
    assert "ours" in reg.status()[0].superseded[0]


def test_withdrawing_the_winner_gives_the_target_back_to_the_fallback(reg, modules):
    mod = modules.load("fb_back", SOURCE)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_back.func", ours)
    with reg.provider("downstream"):
        reg.register("fb_back.func", theirs)
    reg.apply()
    assert mod.func(3) == ("theirs", 3)
    reg.withdraw_provider("downstream")
    reg.apply()
    assert mod.func(3) == ("ours", 3)
    (status,) = reg.status()
    assert status.superseded == ()
    assert status.provider == "megatron_core"
    assert status.state == "applied"
    reg.revert()
    assert mod.func(3) == ("orig", 3)


def test_unregistering_the_winner_or_the_waiting_fallback(reg, modules):
    mod = modules.load("fb_unreg", SOURCE)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_unreg.func", ours)
    reg.register("fb_unreg.func", theirs)
    reg.unregister("fb_unreg.func", theirs)
    reg.apply()
    assert mod.func(4) == ("ours", 4)
    reg.revert()
    reg.register("fb_unreg.func", theirs)
    reg.unregister("fb_unreg.func", ours)  # the waiting fallback itself
    assert reg.status()[0].superseded == ()
    reg.unregister("fb_unreg.func", theirs)
    assert "fb_unreg.func" not in reg


def test_withdrawing_the_fallbacks_provider_drops_the_waiting_fallback_only(reg, modules):
    mod = modules.load("fb_drop", SOURCE)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_drop.func", ours)
    reg.register("fb_drop.func", theirs)
    reg.apply()
    reg.withdraw_provider("megatron_core")
    reg.apply()
    assert mod.func(5) == ("theirs", 5)
    assert reg.status()[0].superseded == ()


def test_two_fallbacks_conflict_and_two_ordinary_replacements_still_conflict(reg, modules):
    modules.load("fb_conflict", SOURCE)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_conflict.func", ours)
    with pytest.raises(PatchConflictError), reg.provider("msadapter", fallback=True):
        reg.register("fb_conflict.func", third)
    reg.register("fb_conflict.func", theirs)
    with pytest.raises(PatchConflictError, match="force_patch"):
        reg.register("fb_conflict.func", third)
    assert reg.status()[0].replacement.endswith("theirs")


def test_a_failed_provider_block_puts_the_fallback_back_in_place(reg, modules):
    mod = modules.load("fb_rollback", SOURCE)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_rollback.func", ours)
    with pytest.raises(RuntimeError), reg.provider("downstream"):
        reg.register("fb_rollback.func", theirs)
        raise RuntimeError("provider failed half-way")
    reg.apply()
    assert mod.func(6) == ("ours", 6)
    assert reg.status()[0].superseded == ()


def test_a_registration_after_apply_supersedes_on_the_next_apply_and_revert_is_exact(reg, modules):
    mod = modules.load("fb_applied", SOURCE)
    original = mod.func
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_applied.func", ours)
    reg.apply()
    assert mod.func(7) == ("ours", 7)
    reg.register("fb_applied.func", theirs)
    reg.apply()
    assert mod.func(7) == ("theirs", 7)
    reg.revert()
    assert mod.func is original


def test_built_in_providers_are_fallbacks_and_other_providers_are_not(reg, modules):
    from mindspeed_ms.adaptation.providers import Provider, discover_providers, register_providers

    found = discover_providers({}, entry_points=False)
    assert found.providers
    assert all(provider.builtin for provider in found.providers)
    mod = modules.load("fb_providers", SOURCE)

    def fix(registry, args):
        registry.register("fb_providers.func", ours)

    def feature(registry, args):
        registry.register("fb_providers.func", theirs)

    register_providers(reg, [Provider("builtin_fix", fix, builtin=True), Provider("feature", feature)], None)
    reg.apply()
    assert mod.func(8) == ("theirs", 8)
    assert "'builtin_fix'" in reg.status()[0].superseded[0]
    reg.revert()
    with pytest.raises(Exception, match="already has replacement"):
        register_providers(reg, [Provider("plain", fix), Provider("feature2", feature)], None)


def test_a_superseding_replacement_left_out_for_its_requirements_gives_the_target_back_to_the_fallback(reg, modules):
    mod = modules.load("fb_unmet", SOURCE)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_unmet.func", ours)
    with reg.provider("downstream"):
        reg.register("fb_unmet.func", theirs, requires="packaging>=999")  # unmet
    reg.apply()
    assert mod.func(1) == ("ours", 1)  # the fallback, not the original
    (status,) = reg.status()
    assert status.state == "applied"
    assert status.provider == "megatron_core"
    assert any("theirs" in note and "left out" in note for note in status.warnings)
    reg.revert()
    assert mod.func(1) == ("orig", 1)


def test_status_names_the_provider_of_the_installed_replacement_not_of_the_waiting_fallback(reg, modules):
    mod = modules.load("fb_user", SOURCE)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_user.func", ours)
    reg.register("fb_user.func", theirs)  # the user's, outside any provider
    reg.apply()
    assert mod.func(1) == ("theirs", 1)
    (status,) = reg.status()
    assert status.provider is None
    assert status.replacement.endswith("theirs")
    assert "'megatron_core'" in status.superseded[0]


def test_a_users_block_duplicating_a_providers_survives_withdrawing_the_provider(reg, modules):
    import importlib

    modules.write("fb_blocked", "VALUE = 1\n")
    with reg.provider("third_party"):
        reg.block("fb_blocked")
    reg.block("fb_blocked")  # the user's own, same module
    reg.apply()
    reg.withdraw_provider("third_party")
    assert "fb_blocked" in reg
    reg.apply()
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("fb_blocked")
    reg.revert()
    assert importlib.import_module("fb_blocked").VALUE == 1


def test_after_a_failed_apply_status_names_the_fallback_still_installed(reg, modules):
    # The fallback is applied; a newer registration takes the target, but the apply() installing it fails
    # on another patch and is rolled back: the fallback is what the slot holds, and status says so (not
    # the newer registration's name); the next apply installs the newer one.
    mod = modules.load("fb_failed", SOURCE)
    broken = modules.load("fb_failed_broken", SOURCE)
    with reg.provider("megatron_core", fallback=True):
        reg.register("fb_failed.func", ours)
    reg.apply()
    with reg.provider("mindspeed.patch_utils"):
        reg.register("fb_failed.func", theirs)

    def exploding(fn):
        raise RuntimeError("wrap exploded")

    reg.register("fb_failed_broken.func", exploding, kind="wrap")
    with pytest.raises(PatchApplyError, match="wrap exploded"):
        reg.apply()
    assert mod.func(1) == ("ours", 1)
    status = next(status for status in reg.status() if status.target == "fb_failed.func")
    assert status.state == "applied"
    assert status.replacement.endswith(".ours")
    assert status.provider == "megatron_core"
    reg.unregister("fb_failed_broken.func")
    reg.apply()
    assert mod.func(1) == ("theirs", 1)
    assert broken.func(1) == ("orig", 1)
    (status,) = reg.status()
    assert status.replacement.endswith(".theirs")
