"""mindspeed_ms.engine.aliases: the one-pass rebinding of ``from``-imported copies of targets, and its mirror on revert.

Every test runs twice: with the C accelerator and with the pure-Python pass (same results, same guarantees).
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_ms.engine import aliases


@pytest.fixture(autouse=True, params=[True, False], ids=["accelerated", "pure-python"])
def alias_pass(request) -> Iterator[bool]:
    with aliases.accelerator(request.param):
        yield request.param


def test_the_accelerator_is_built_by_the_install():
    # .ci/run installs from scratch (pip install -e): this fails there if _identity.c did not compile
    assert aliases.has_accelerator(), "mindspeed_ms.engine._identity is missing: pip install -e . needs a C compiler"


def test_the_switch_chooses_the_pass(alias_pass):
    assert aliases.is_accelerated() is alias_pass


def test_the_switch_puts_the_previous_pass_back(alias_pass):
    with aliases.accelerator(not alias_pass):
        assert aliases.is_accelerated() is not alias_pass
    assert aliases.is_accelerated() is alias_pass


def test_aliases_taken_before_apply_are_rebound_and_restored(reg, modules):
    target = modules.load("a_target", "def func():\n    return 'orig'\nclass K: pass\n")
    user = modules.load("a_user", "from a_target import func, K\nfrom a_target import func as renamed\n")
    original = target.func
    reg.register("a_target.func", lambda: "new")
    reg.apply()
    assert user.func() == "new"
    assert user.renamed is original  # other names are left alone
    assert reg.status()[0].aliases == ("a_user",)
    reg.revert()
    assert user.func is original


def test_alias_taken_after_apply_sees_the_replacement(reg, modules):
    modules.load("a_target2", "def func():\n    return 'orig'\n")
    reg.register("a_target2.func", lambda: "new")
    reg.apply()
    late = modules.load("a_late", "from a_target2 import func\n")
    assert late.func() == "new"


def test_module_defining_the_replacement_keeps_the_original(reg, modules):
    target = modules.load("a_target3", "def func():\n    return 'orig'\n")
    impl = modules.load("a_impl", """
        from a_target3 import func

        def better():
            return ("better", func())
    """)
    reg.register("a_target3.func", impl.better)
    reg.apply()
    assert target.func() == ("better", "orig")
    assert impl.func.__name__ == "func"


def test_aliases_of_trivial_values_are_never_rebound(reg, modules):
    modules.load("a_const", "FLAG = None\nNUMBER = 3\n")
    other = modules.load("a_const_user", "FLAG = None\nNUMBER = 3\n")
    reg.register("a_const.FLAG", lambda: None)
    reg.apply()
    assert other.FLAG is None


def test_alias_pass_never_calls_module_getattr(reg, modules):
    modules.load("a_target4", "def func():\n    return 'orig'\n")
    modules.load("a_lazy", "def __getattr__(name):\n    raise RuntimeError('touched ' + name)\n")
    reg.register("a_target4.func", lambda: "new")
    report = reg.apply()  # would raise if the pass used hasattr/getattr on a_lazy
    assert report.applied == 1
    assert report.statuses[0].aliases == ()
    assert sys.modules["a_target4"].func() == "new"


def test_from_import_taken_while_applied_is_restored_by_revert(reg, modules):
    mod = modules.load("p_late", "def func():\n    return 'orig'\n")
    original = mod.func

    def late_new():
        return "new"

    reg.register("p_late.func", late_new)
    reg.apply()
    user = modules.load("p_late_user", "from p_late import func\n")
    assert user.func is late_new
    reg.revert()
    assert user.func is original
    assert mod.func is original


def test_revert_leaves_the_module_defining_the_replacement_alone(reg, modules):
    modules.load("p_def", "def func():\n    return 'orig'\n")
    home = modules.load("p_def_home", "def func():\n    return 'new'\n")
    reg.register("p_def.func", home.func)
    reg.apply()
    reg.revert()
    assert home.func() == "new"


def test_aliases_are_rebound_whether_a_module_is_probed_by_name_or_scanned_whole(reg, modules):
    # With many target names a small module has all its values looked at; with few, a big module is
    # probed for the wanted names only: both find the alias, neither touches a look-alike.
    names = [f"f{i}" for i in range(40)]
    modules.load("a_many", "".join(f"def {name}():\n    return 'orig'\n" for name in names))
    small = modules.load("a_small_user", "from a_many import f7\n")
    big = modules.load("a_big_user", "from a_many import f3\n" + "".join(f"v{i} = {i}\n" for i in range(200)))
    for name in names:
        reg.register(f"a_many.{name}", lambda: "new")
    reg.apply()
    assert small.f7() == "new"
    assert big.f3() == "new"
    reg.revert()
    assert small.f7() == "orig"
    assert big.f3() == "orig"


def _executed_lines(n_modules: int) -> int:
    """Lines of aliases.py executed by one pass over ``n_modules`` modules binding ``forward`` (10 to an original)."""
    originals = [types.FunctionType((lambda: None).__code__, {}) for _ in range(10)]
    entries = [("forward", o, lambda: "new", types.SimpleNamespace(aliases=[]), frozenset()) for o in originals]
    names = []
    for m in range(n_modules):
        name = f"p_lin_{n_modules}_{m}"
        module = types.ModuleType(name)
        module.forward = originals[m] if m < len(originals) else (lambda: None)
        sys.modules[name] = module
        names.append(name)
    count = 0
    source = aliases.__file__

    def tracer(frame, event, arg):
        nonlocal count
        if frame.f_code.co_filename == source:
            if event == "line":
                count += 1
            return tracer
        return None

    gc.collect()
    gc.disable()  # a collection inside the pass would run other objects' finalizers under it
    sys.settrace(tracer)
    try:
        aliases.rebind_aliases([], entries, journaled=False)
    finally:
        sys.settrace(None)
        gc.enable()
        rebound = [sys.modules[name].forward for name in names[:10]]
        for name in names:
            del sys.modules[name]
    assert rebound == [entry[2] for entry in entries]
    return count


def test_the_alias_pass_does_no_python_work_per_binding_that_holds_no_original():
    # Counted in executed lines, not time: modules that bind a target's name to something of their
    # own (``forward`` in thousands of modules) are filtered out in C; Python runs only where an
    # original is bound.
    assert _executed_lines(3000) - _executed_lines(300) < 50


HOSTILE = """
calls = []


class Hostile:
    def __eq__(self, other):
        calls.append("__eq__")
        raise RuntimeError("compared")

    def __ne__(self, other):
        calls.append("__ne__")
        raise RuntimeError("compared")

    def __hash__(self):
        calls.append("__hash__")
        raise RuntimeError("hashed")

    def __getattr__(self, name):
        calls.append("__getattr__ " + name)
        raise RuntimeError("read")

    def __bool__(self):
        calls.append("__bool__")
        raise RuntimeError("tested")


func = Hostile()
other = [1, 2]
also = Hostile()
"""


def test_the_alias_pass_runs_no_code_of_the_bindings_it_looks_at(reg, modules):
    # Modules binding a target's name (and others) to objects whose __eq__/__hash__/__getattr__ raise and
    # record the call, or to unhashable ones: the pass compares identities only, on apply and on revert.
    target = modules.load("a_target5", "def func():\n    return 'orig'\n")
    hostile = modules.load("a_hostile", HOSTILE)
    user = modules.load("a_user5", "from a_target5 import func\n")
    reg.register("a_target5.func", lambda: "new")
    reg.apply()
    assert user.func() == "new"
    assert isinstance(hostile.func, hostile.Hostile)
    late = modules.load("a_late5", "from a_target5 import func\n")
    reg.revert()
    assert late.func is target.func
    assert hostile.calls == []


def test_a_module_subclass_is_read_through_its_namespace_only(reg, modules):
    # A module class whose __getattribute__ and __dict__ lookups raise: its own namespace is still
    # read (without them) and its copy of the target rebound.
    modules.load("a_target6", "def func():\n    return 'orig'\n")
    user = modules.load("a_user6", "from a_target6 import func\n")
    calls = []

    class Guarded(types.ModuleType):
        def __getattribute__(self, name):
            calls.append(name)
            raise RuntimeError(f"read {name}")

    user.__class__ = Guarded
    reg.register("a_target6.func", lambda: "new")
    reg.apply()
    namespace = vars(types.ModuleType)["__dict__"].__get__(user)
    user.__class__ = types.ModuleType
    assert namespace["func"]() == "new"
    assert calls == []


def test_a_binding_under_a_name_that_is_not_a_string_is_left_alone(reg, modules):
    target = modules.load("a_target7", "def func():\n    return 'orig'\n")
    holder = modules.load("a_holder7", "")
    holder.__dict__[7] = target.func
    reg.register("a_target7.func", lambda: "new")
    reg.apply()
    assert holder.__dict__[7]() == "orig"


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["f", "g", "h", "x"]), st.integers(0, 5)), max_size=6),
                min_size=1, max_size=8),
       st.lists(st.tuples(st.sampled_from(["f", "g", "h"]), st.integers(0, 5)), min_size=1, max_size=6))
def test_both_passes_rebind_exactly_the_same_bindings(layout, wanted):
    # Random modules binding random names to a few shared objects; entries asking for some (name,
    # object) pairs: the accelerated and the pure-Python pass rebind the same bindings, and only those
    # whose name and object both match an entry (the first entry of a name and object wins).
    objects = [types.FunctionType((lambda: None).__code__, {}) for _ in range(6)]
    entries = [(name, objects[o], object(), types.SimpleNamespace(aliases=[]), frozenset())
               for name, o in wanted]
    results = []
    for accelerated in (True, False):
        names = []
        for m, bindings in enumerate(layout):
            module = types.ModuleType(f"a_prop_{m}")
            for name, o in bindings:
                setattr(module, name, objects[o])
            sys.modules[module.__name__] = module
            names.append(module.__name__)
        try:
            with aliases.accelerator(accelerated):
                aliases.rebind_aliases([], entries, journaled=False)
            results.append({(n, key): value for n in names for key, value in vars(sys.modules[n]).items()
                            if not key.startswith("__")})
        finally:
            for n in names:
                del sys.modules[n]
    assert results[0] == results[1]
    expected = {}
    for m, bindings in enumerate(layout):
        for name, o in dict(bindings).items():
            first = next((e for e in entries if e[0] == name and e[1] is objects[o]), None)
            expected[(f"a_prop_{m}", name)] = objects[o] if first is None else first[2]
    assert results[0] == expected


def test_revert_leaves_the_replacements_own_package_alone(reg, modules):
    # A package re-exporting its replacement (``from .impl import func`` in another of its modules) keeps
    # it on revert; a module elsewhere that from-imported the replacement while applied gets the original.
    target = modules.load("a_tgt8", "def func():\n    return 'orig'\n")
    modules.write("a_home8", "", package=True)
    impl = modules.load("a_home8.impl", "def func():\n    return 'new'\n")
    reexport = modules.load("a_home8.reexport", "from a_home8.impl import func\n")
    original, new = target.func, impl.func
    reg.register("a_tgt8.func", new)
    reg.apply()
    elsewhere = modules.load("a_elsewhere8", "from a_tgt8 import func\n")
    reg.revert()
    assert elsewhere.func is original
    assert impl.func is new
    assert reexport.func is new


def test_revert_restores_a_late_copy_of_a_wrapped_target_in_the_targets_own_package(reg, modules):
    # functools.wraps gives the wrap the original's __module__: a module of the target's own package that
    # from-imported the target while the wrap was applied holds a copy of the target, restored on revert
    modules.write("a_pkg10", "", package=True)
    target = modules.load("a_pkg10.mappings", "def func(x):\n    return x + 1\n")
    original = target.func

    def wrapper(op):
        import functools

        @functools.wraps(op)
        def wrapped(x):
            return op(x) * 10
        return wrapped

    reg.register("a_pkg10.mappings.func", wrapper, kind="wrap")
    reg.apply()
    late = modules.load("a_pkg10.layers", "from a_pkg10.mappings import func\n")
    assert late.func(1) == 20
    assert late.func.__module__ == "a_pkg10.mappings"
    reg.revert()
    assert target.func is original
    assert late.func is original


def test_revert_leaves_a_module_that_held_the_replacement_before_apply_as_it_was(reg, modules):
    # ``from home import func`` of its own, taken before the patch (a test module importing the adapter it tests):
    # the revert's mirror pass must not hand it the original; a copy of the target's original is still restored
    target = modules.load("a_tgt9", "def func():\n    return 'orig'\n")
    home = modules.load("a_home9", "def func():\n    return 'new'\n")
    early = modules.load("a_early9", "from a_home9 import func\n")
    copy = modules.load("a_copy9", "from a_tgt9 import func\n")
    original, new = target.func, home.func
    reg.register("a_tgt9.func", new)
    reg.apply()
    assert early.func is new
    assert copy.func is new
    late = modules.load("a_late9", "from a_tgt9 import func\n")  # while applied: the original comes back on revert
    reg.revert()
    assert early.func is new
    assert copy.func is original
    assert late.func is original
    # and again, with nothing left over from the first round
    reg.apply()
    reg.revert()
    assert (early.func, copy.func, late.func, target.func) == (new, original, original, original)
