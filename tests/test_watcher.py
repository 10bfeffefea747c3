"""mindspeed_ms.engine.watcher: import-time application (deferred patches, reload, eviction, failures, threads)."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import threading

import pytest

from mindspeed_ms.engine.watcher import default_watcher
from mindspeed_ms.errors import PatchApplyError

SOURCE = "def func():\n    return 'orig'\n\nclass K:\n    def meth(self):\n        return 'orig'\n"


def new_func():
    return "new"


def test_target_in_unimported_module_is_patched_when_it_is_imported(reg, modules):
    modules.write("h_lazy", SOURCE)
    reg.register("h_lazy.func", new_func)
    report = reg.apply()
    assert report.pending == 1
    assert "h_lazy" not in sys.modules
    mod = importlib.import_module("h_lazy")
    assert mod.func is new_func
    assert reg.status()[0].state == "applied"


def test_deferred_patch_is_in_before_any_from_import(reg, modules):
    modules.write("h_lazy2", SOURCE)
    reg.register("h_lazy2.func", new_func)
    reg.apply()
    user = modules.load("h_user2", "from h_lazy2 import func\n")
    assert user.func is new_func


def test_deferred_target_in_a_submodule_of_an_unimported_package(reg, modules):
    modules.write("h_pkg.deep.mod", SOURCE)
    reg.register("h_pkg.deep.mod.K.meth", lambda self: "new")
    reg.apply()
    importlib.import_module("h_pkg")
    assert reg.status()[0].state == "pending-import"
    mod = importlib.import_module("h_pkg.deep.mod")
    assert mod.K().meth() == "new"


def test_reload_reapplies_patches(reg, modules):
    mod = modules.load("h_reload", SOURCE)
    reg.register("h_reload.func", new_func)
    reg.apply()
    importlib.reload(mod)
    assert mod.func is new_func
    reg.revert()
    assert mod.func() == "orig"


def test_eviction_and_reimport_reapply_patches(reg, modules):
    modules.load("h_evict", SOURCE)
    reg.register("h_evict.func", new_func)
    reg.apply()
    del sys.modules["h_evict"]
    again = importlib.import_module("h_evict")
    assert again.func is new_func


def test_revert_disarms_hooks(reg, modules):
    modules.write("h_disarm", SOURCE)
    reg.register("h_disarm.func", new_func)
    reg.apply()
    reg.revert()
    assert "h_disarm" not in default_watcher().watched()
    assert importlib.import_module("h_disarm").func() == "orig"


def test_deferred_missing_attribute_is_failed_and_import_still_works(reg, modules, caplog):
    modules.write("h_fail", SOURCE)
    reg.register("h_fail.fnuc", new_func)
    reg.register("h_fail.K.meth", lambda self: "new")
    reg.apply()
    with caplog.at_level(logging.ERROR, logger="mindspeed_ms"):
        mod = importlib.import_module("h_fail")
    states = {s.target: s for s in reg.status()}
    assert states["h_fail.fnuc"].state == "failed"
    assert "'func'" in states["h_fail.fnuc"].reason
    assert states["h_fail.K.meth"].state == "applied"
    assert mod.K().meth() == "new"
    assert any("h_fail.fnuc" in r.getMessage() for r in caplog.records)


def test_strict_deferred_failure_rolls_back_the_module_and_fails_the_import(make_registry, modules):
    strict = make_registry("strict", strict=True)
    modules.write("h_strict", SOURCE)
    strict.register("h_strict.K.meth", lambda self: "new")
    strict.register("h_strict.fnuc", new_func)
    strict.apply()
    with pytest.raises(PatchApplyError) as info:
        importlib.import_module("h_strict")
    assert info.value.target == "h_strict.fnuc"
    assert "h_strict" not in sys.modules


def test_apply_is_idempotent(reg, modules):
    mod = modules.load("h_idem", SOURCE)
    wrapped = []

    def idem_wrapper(fn):
        wrapped.append(fn)
        return lambda: ("w", fn())

    reg.register("h_idem.func", idem_wrapper)
    first = reg.apply()
    installed = mod.func
    second = reg.apply()
    assert mod.func is installed
    assert len(wrapped) == 1  # the second apply() installed nothing
    assert first.counts == second.counts
    assert second.applied == 1
    reg.revert()
    assert mod.func() == "orig"


def test_revert_twice_is_a_no_op_and_reapply_works(reg, modules):
    mod = modules.load("h_again", SOURCE)
    reg.register("h_again.func", new_func)
    reg.apply()
    reg.revert()
    reg.revert()
    assert mod.func() == "orig"
    reg.apply()
    assert mod.func is new_func


def test_eight_threads_importing_fifty_hooked_modules_apply_each_patch_once(reg, modules):
    count = 50
    applied_calls = []
    for i in range(count):
        modules.write(f"h_thread_{i}", f"def func():\n    return {i}\n")

    def make(i):
        def counting_wrapper(fn):
            applied_calls.append(i)
            return lambda: ("new", fn())
        return counting_wrapper

    for i in range(count):
        reg.register(f"h_thread_{i}.func", make(i))
    reg.apply()
    barrier = threading.Barrier(8)
    errors = []

    def worker(offset):
        barrier.wait()
        try:
            for j in range(count):
                mod = importlib.import_module(f"h_thread_{(j + offset) % count}")
                assert mod.func()[0] == "new"
        except BaseException as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(k * 7,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "deadlock"
    assert errors == []
    assert sorted(applied_calls) == list(range(count))
    assert all(s.state == "applied" for s in reg.status())


def test_apply_and_revert_from_several_threads(make_registry, modules):
    mod = modules.load("h_threads_apply", SOURCE)
    registry = make_registry("threads")
    registry.register("h_threads_apply.func", new_func)
    barrier = threading.Barrier(6)

    errors = []
    seen = set()

    def worker(k):
        barrier.wait()
        try:
            for _ in range(20):
                registry.apply() if k % 2 else registry.revert()
                seen.add(mod.func() if mod.func in (new_func,) or mod.func() == "orig" else "torn")
        except BaseException as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "deadlock"
    assert errors == []
    assert seen <= {"new", "orig"}
    registry.revert()
    assert mod.func() == "orig"
    assert not registry.is_applied


def test_sibling_from_import_during_package_init_sees_the_patch(reg, modules):
    # The package's __init__ imports `core` then `user`, which does `from pkg.core import func`
    # while the package is still initializing: the hook must be on `pkg.core` itself.
    modules.write("h_eager.core", SOURCE)
    modules.write("h_eager.user", "from h_eager.core import func\n")
    modules.write("h_eager", "from . import core, user\n", package=True)
    reg.register("h_eager.core.func", new_func)
    reg.apply()
    import h_eager
    assert h_eager.user.func is new_func


# -- other finders, namespace folders, blocks (issue 11 items 1, 2, 8, 9) -------------------------
@pytest.fixture
def meta_path_order():
    saved = list(sys.meta_path)
    yield sys.meta_path
    sys.meta_path[:] = saved


@pytest.mark.parametrize("first", ["ours", "wrapt"])
def test_a_wrapt_post_import_hook_on_a_hooked_module_fires_our_hook_once(reg, modules, meta_path_order, first):
    import wrapt

    name = f"h_wrapt_{first}"
    modules.write(name, SOURCE)
    applied = []

    def tag_wrapper(fn):
        applied.append(fn)
        return lambda: fn() + "+w"

    reg.register(f"{name}.func", tag_wrapper)
    reg.apply()
    seen = []
    wrapt.register_post_import_hook(seen.append, name)
    # wrapt puts its finder on meta_path once per process; place one where this case wants it
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, wrapt.importer.ImportHookFinder)]
    sys.meta_path.insert(0 if first == "wrapt" else 1, wrapt.importer.ImportHookFinder())
    assert (sys.meta_path[0] is reg.watcher) == (first == "ours")
    mod = importlib.import_module(name)
    assert [m.__name__ for m in seen] == [name]
    assert len(applied) == 1
    assert mod.func() == "orig+w"
    reg.revert()
    assert mod.func() == "orig"


def test_deferred_target_in_a_namespace_folder_of_an_unimported_package_applies_on_import(reg, tmp_path, modules):
    from _helpers import write_files

    write_files(modules.root, {"h_nsreg/__init__.py": "", "h_nsreg/space/deep/mod.py": SOURCE})
    modules.names.add("h_nsreg")
    importlib.invalidate_caches()
    reg.register("h_nsreg.space.deep.mod.func", new_func)
    report = reg.apply()
    assert report.pending == 1
    mod = importlib.import_module("h_nsreg.space.deep.mod")
    assert mod.func is new_func
    assert reg.status()[0].state == "applied"
    reg.revert()
    assert mod.func() == "orig"


class _FrontFinder:
    """A typeguard-style finder: asks PathFinder directly and wraps the loader it gets."""

    def __init__(self, names):
        self.names = names
        self.used = []

    def find_spec(self, fullname, path=None, target=None):
        from importlib.machinery import PathFinder

        if fullname not in self.names:
            return None
        spec = PathFinder.find_spec(fullname, path)
        self.used.append(fullname)
        return spec


def test_a_finder_inserted_ahead_after_apply_does_not_keep_deferred_patches_out(reg, modules, meta_path_order):
    modules.write("h_front", SOURCE)
    modules.write("h_front_next", "")
    reg.register("h_front.func", new_func)
    reg.apply()
    front = _FrontFinder({"h_front"})
    sys.meta_path.insert(0, front)
    mod = importlib.import_module("h_front")
    assert front.used == ["h_front"]  # the import went past our finder
    importlib.import_module("h_front_next")  # the next import our finder sees catches up
    assert mod.func is new_func
    assert reg.status()[0].state == "applied"
    reg.revert()
    assert mod.func() == "orig"


def test_status_catches_up_with_a_module_imported_past_our_finder(reg, modules, meta_path_order):
    modules.write("h_front2", SOURCE)
    reg.register("h_front2.func", new_func)
    reg.apply()
    sys.meta_path.insert(0, _FrontFinder({"h_front2"}))
    mod = importlib.import_module("h_front2")
    assert reg.status()[0].state == "applied"
    assert mod.func is new_func


def test_find_spec_of_a_blocked_module_is_none_and_its_import_raises(reg, modules):
    from mindspeed_ms.errors import AdaptationError, BlockedModuleError

    modules.write("h_blocked", SOURCE)
    reg.block("h_blocked")
    reg.apply()
    assert importlib.util.find_spec("h_blocked") is None
    with pytest.raises(ModuleNotFoundError, match="blocked by mindspeed_ms registry test") as info:
        importlib.import_module("h_blocked")
    assert isinstance(info.value, BlockedModuleError)
    assert isinstance(info.value, AdaptationError)
    assert info.value.name == "h_blocked"
    reg.revert()
    assert importlib.util.find_spec("h_blocked") is not None


# -- the deferred unit: races, re-exports, strict failures (issue 11 items 3, 5, 12) ----------------
def test_revert_racing_with_a_deferred_install_leaves_every_original(reg, modules):
    modules.write("h_race", "def first():\n    return 'orig'\n\ndef second():\n    return 'orig'\n")
    reg.register("h_race.first", lambda: "new")
    entered, release = threading.Event(), threading.Event()

    def slow_wrapper(fn):
        entered.set()
        release.wait(10)
        return lambda: "new"

    reg.register("h_race.second", slow_wrapper)
    reg.apply()
    imported = {}
    thread = threading.Thread(target=lambda: imported.setdefault("mod", importlib.import_module("h_race")))
    thread.start()
    assert entered.wait(10)
    reg.revert()  # while the hook is half-way through the module's patches
    release.set()
    thread.join(10)
    assert not thread.is_alive()
    mod = imported["mod"]
    assert (mod.first(), mod.second()) == ("orig", "orig")
    reg.apply()
    reg.revert()
    assert (mod.first(), mod.second()) == ("orig", "orig")
    assert {s.state for s in reg.status()} == {"reverted"}


@pytest.mark.parametrize("order", ["eager", "lazy"])
def test_a_reexported_target_ends_the_same_whatever_the_import_order(make_registry, modules, order):
    name = f"h_reexp_{order}"
    modules.write(f"{name}.impl", "def func():\n    return 'orig'\n")
    modules.write(name, "from .impl import func\n", package=True)
    registry = make_registry(order)
    registry.register(f"{name}.impl.func", new_func)
    if order == "eager":
        importlib.import_module(name)
    registry.apply()
    pkg = importlib.import_module(name)
    assert pkg.func is new_func
    assert pkg.impl.func is new_func
    registry.revert()
    assert pkg.impl.func() == "orig"
    assert pkg.func is pkg.impl.func


def test_strict_deferred_failure_reports_the_real_states(make_registry, modules):
    strict = make_registry("strict-states", strict=True)
    modules.write("h_strict2", SOURCE)
    strict.register("h_strict2.K.meth", lambda self: "new")
    strict.register("h_strict2.fnuc", new_func)
    strict.apply()
    with pytest.raises(PatchApplyError):
        importlib.import_module("h_strict2")
    states = {s.target: (s.state, s.reason) for s in strict.status()}
    assert states["h_strict2.K.meth"] == ("pending-import", None)  # rolled back, still armed
    assert states["h_strict2.fnuc"][0] == "failed"
    assert "'func'" in states["h_strict2.fnuc"][1]


def test_an_interrupt_inside_a_deferred_wrap_rolls_the_module_back_with_real_states(reg, modules):
    modules.write("h_interrupt", SOURCE)
    reg.register("h_interrupt.func", new_func)
    calls = []

    def interrupting_wrapper(fn):
        calls.append(fn)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return fn

    reg.register("h_interrupt.K.meth", interrupting_wrapper)
    reg.apply()
    with pytest.raises(KeyboardInterrupt):
        importlib.import_module("h_interrupt")
    states = {s.target: s.state for s in reg.status()}
    assert states == {"h_interrupt.func": "pending-import", "h_interrupt.K.meth": "failed"}
    mod = importlib.import_module("h_interrupt")  # the next import applies both
    assert mod.func is new_func
    assert mod.K().meth() == "orig"
    assert {s.state for s in reg.status()} == {"applied"}


def test_a_registry_can_use_an_import_watcher_of_its_own(make_registry, modules, meta_path_order):
    from mindspeed_ms.engine.watcher import ImportWatcher

    own = ImportWatcher()
    registry = make_registry("own-watcher", watcher=own)
    modules.write("h_own", SOURCE)
    registry.register("h_own.func", new_func)
    registry.apply()
    assert own.watched() == ("h_own",)
    assert "h_own" not in default_watcher().watched()
    assert importlib.import_module("h_own").func is new_func
    registry.revert()
    assert own not in sys.meta_path
    assert sys.modules["h_own"].func() == "orig"


# --- when_imported: the generic one-shot "call this when module X has executed" ---
def test_when_imported_calls_back_once_after_the_module_executes(modules):
    from mindspeed_ms.engine.watcher import ImportWatcher

    own = ImportWatcher()
    modules.write("h_once", "VALUE = 'executed'\n")
    seen = []
    own.when_imported("h_once", lambda module: seen.append(module.VALUE))
    assert seen == []
    mod = importlib.import_module("h_once")
    assert seen == ["executed"]
    importlib.reload(mod)
    assert seen == ["executed"]  # once, not on every execution
    assert own not in sys.meta_path  # nothing left subscribed: the watcher took itself off


def test_when_imported_calls_back_at_once_for_a_module_already_imported(modules):
    from mindspeed_ms.engine.watcher import ImportWatcher

    own = ImportWatcher()
    mod = modules.load("h_there", "VALUE = 1\n")
    seen = []
    own.when_imported("h_there", seen.append)
    assert seen == [mod]
    assert own not in sys.meta_path


def test_a_cancelled_when_imported_never_calls_back(modules):
    from mindspeed_ms.engine.watcher import ImportWatcher

    own = ImportWatcher()
    modules.write("h_cancelled", "VALUE = 1\n")
    seen = []
    cancel = own.when_imported("h_cancelled", seen.append)
    cancel()
    cancel()  # idempotent
    importlib.import_module("h_cancelled")
    assert seen == []
    assert own not in sys.meta_path


def test_when_imported_fires_for_the_package_before_its_submodules_execute(modules):
    from mindspeed_ms.engine.watcher import ImportWatcher

    own = ImportWatcher()
    modules.write("h_parent.child", "import h_parent\nSEEN = h_parent.ORDER[:]\n")
    modules.write("h_parent", "ORDER = []\n", package=True)
    own.when_imported("h_parent", lambda module: module.ORDER.append("callback"))
    child = importlib.import_module("h_parent.child")
    assert child.SEEN == ["callback"]
def test_when_imported_fires_for_a_namespace_package_before_its_submodules(modules, tmp_path):
    from mindspeed_ms.engine.watcher import ImportWatcher

    own = ImportWatcher()
    package = modules.root / "h_namespace"  # no __init__.py: a namespace package, like megatron-core's megatron/
    package.mkdir()
    (package / "child.py").write_text("import h_namespace\nSEEN = list(getattr(h_namespace, 'ORDER', []))\n")
    modules.names.add("h_namespace")
    importlib.invalidate_caches()
    seen = []

    def record(module):
        module.ORDER = ["callback"]
        seen.append(module)

    own.when_imported("h_namespace", record)
    parent = importlib.import_module("h_namespace")
    child = importlib.import_module("h_namespace.child")
    assert seen == [parent]
    assert child.SEEN == ["callback"]
