"""mindspeed_ms.engine.journal: descriptor kinds, inherited targets, stubs, blocks, atomic rollback."""

from __future__ import annotations

import importlib
import sys

import pytest

from mindspeed_ms.errors import PatchApplyError

DESCRIPTORS = """
class Base:
    def inherited(self):
        return "base"

class Klass(Base):
    @staticmethod
    def static(x):
        return ("static", x)

    @classmethod
    def klass(cls, x):
        return ("class", cls.__name__, x)

    @property
    def prop(self):
        return "prop"

    @prop.setter
    def prop(self, value):
        self._prop = value
"""


def test_plain_function_replacing_staticmethod_installs_a_staticmethod(reg, modules):
    mod = modules.load("d_static", DESCRIPTORS)
    before = vars(mod.Klass)["static"]
    reg.register("d_static.Klass.static", lambda x: ("new", x))
    reg.apply()
    assert isinstance(vars(mod.Klass)["static"], staticmethod)
    assert mod.Klass().static(1) == ("new", 1)
    assert mod.Klass.static(2) == ("new", 2)
    reg.revert()
    assert vars(mod.Klass)["static"] is before


def test_classmethod_stays_a_classmethod(reg, modules):
    mod = modules.load("d_class", DESCRIPTORS)
    before = vars(mod.Klass)["klass"]
    reg.register("d_class.Klass.klass", lambda cls, x: ("new", cls.__name__, x))
    reg.apply()
    assert isinstance(vars(mod.Klass)["klass"], classmethod)
    assert mod.Klass.klass(3) == ("new", "Klass", 3)
    reg.revert()
    assert vars(mod.Klass)["klass"] is before


def test_wrap_of_a_staticmethod_wraps_the_function_inside(reg, modules):
    mod = modules.load("d_static_wrap", DESCRIPTORS)

    def twice_wrapper(fn):
        return lambda x: (fn(x), fn(x))

    reg.register("d_static_wrap.Klass.static", twice_wrapper)
    reg.apply()
    assert isinstance(vars(mod.Klass)["static"], staticmethod)
    assert mod.Klass.static(1) == (("static", 1), ("static", 1))


def test_plain_function_replacing_property_becomes_the_getter(reg, modules):
    mod = modules.load("d_prop", DESCRIPTORS)
    before = vars(mod.Klass)["prop"]
    reg.register("d_prop.Klass.prop", lambda self: "new-prop")
    reg.apply()
    installed = vars(mod.Klass)["prop"]
    assert isinstance(installed, property)
    assert installed.fset is before.fset
    obj = mod.Klass()
    assert obj.prop == "new-prop"
    obj.prop = 5
    assert obj._prop == 5
    reg.revert()
    assert vars(mod.Klass)["prop"] is before


def test_property_object_is_installed_as_is(reg, modules):
    mod = modules.load("d_prop2", DESCRIPTORS)
    new = property(lambda self: "given")
    reg.register("d_prop2.Klass.prop", new)
    reg.apply()
    assert vars(mod.Klass)["prop"] is new


def test_inherited_target_is_set_on_the_named_class_and_deleted_on_revert(reg, modules):
    mod = modules.load("d_inh", DESCRIPTORS)
    reg.register("d_inh.Klass.inherited", lambda self: "child")
    reg.apply()
    assert "inherited" in vars(mod.Klass)
    assert mod.Klass().inherited() == "child"
    assert mod.Base().inherited() == "base"
    reg.revert()
    assert "inherited" not in vars(mod.Klass)
    assert mod.Klass().inherited() == "base"


def test_create_dummy_creates_stub_modules_and_removes_them(reg):
    reg.register("stub_root_zz.sub.leaf.func", lambda: "stubbed", create_dummy=True)
    reg.apply()
    import stub_root_zz.sub.leaf as leaf
    assert leaf.func() == "stubbed"
    assert reg.status()[0].stub is True
    reg.revert()
    assert not any(name.startswith("stub_root_zz") for name in sys.modules)


def test_stub_modules_answer_find_spec_like_imported_packages(reg):
    # transformers probes optional packages with importlib.util.find_spec; MindSpeed registers
    # flash_attn.flash_attn_interface.flash_attn_unpadded_func with create_dummy=True
    import importlib.util

    reg.register("stub_spec_zz.iface.func", create_dummy=True)
    reg.apply()
    try:
        spec = importlib.util.find_spec("stub_spec_zz")
        assert spec is not None
        assert spec.name == "stub_spec_zz"
        assert spec.origin is None
        assert importlib.util.find_spec("stub_spec_zz.iface").name == "stub_spec_zz.iface"
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("stub_spec_zz.not_there")
    finally:
        reg.revert()
    assert importlib.util.find_spec("stub_spec_zz") is None


def test_create_dummy_placeholder_attribute_on_real_module(reg, modules):
    mod = modules.load("dummy_real", "x = 1\n")
    reg.register("dummy_real.missing_func", create_dummy=True)
    reg.apply()
    with pytest.raises(NotImplementedError, match="dummy_real.missing_func"):
        mod.missing_func()
    reg.revert()
    assert not hasattr(mod, "missing_func")


def test_module_with_its_own_import_error_is_never_stubbed(reg, modules):
    modules.write("broken_mod", "import no_such_dependency_qq\ndef f(): pass\n")
    reg.register("broken_mod.f", lambda: 1, create_dummy=True)
    reg.apply()
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_qq"):
        importlib.import_module("broken_mod")
    assert "broken_mod" not in sys.modules


def test_block_makes_import_fail_and_revert_restores(reg, modules):
    modules.write("blocked_pkg.sub", "x = 1\n")
    reg.block("blocked_pkg")
    reg.apply()
    with pytest.raises(ModuleNotFoundError, match="blocked"):
        importlib.import_module("blocked_pkg")
    reg.revert()
    assert importlib.import_module("blocked_pkg.sub").x == 1


def test_block_of_imported_module_removes_and_restores_it(reg, modules):
    modules.write("blocked2.inner", "x = 1\n")
    import blocked2.inner as inner
    parent = sys.modules["blocked2"]
    reg.block("blocked2.inner")
    reg.apply()
    assert "blocked2.inner" not in sys.modules
    assert "inner" not in vars(parent)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("blocked2.inner")
    reg.revert()
    assert sys.modules["blocked2.inner"] is inner
    assert parent.inner is inner


def test_a_wrap_raising_on_the_7th_of_10_targets_leaves_all_untouched(reg, modules):
    source = "\n".join(f"def f{i}():\n    return {i}\n" for i in range(10))
    mod = modules.load("atomic_mod", source)
    user = modules.load("atomic_user", "from atomic_mod import f0, f1\n")
    before = dict(vars(mod))
    user_before = dict(vars(user))

    def bad_wrapper(fn):
        raise RuntimeError("wrap exploded")

    for i in range(10):
        reg.register(f"atomic_mod.f{i}", lambda: "new")
        if i == 6:
            reg.register(f"atomic_mod.f{i}", bad_wrapper)
    with pytest.raises(PatchApplyError) as info:
        reg.apply()
    assert info.value.target == "atomic_mod.f6"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert dict(vars(mod)) == before
    assert dict(vars(user)) == user_before
    states = {s.target: (s.state, s.reason) for s in reg.status()}
    # the culprit says why in status(); every other patch of the batch is back to registered
    assert states.pop("atomic_mod.f6") == ("failed", "RuntimeError: wrap exploded")
    assert all(state == "registered" for state, _ in states.values())


# -- exact revert in the corners (issue 11 items 4, 6, 7, 10, 11, 13) ------------------------------


def test_deferred_submodule_replacement_puts_the_original_back_on_its_parent(reg, modules):
    import types

    modules.write("p_sub_pkg.sub", "value = 'orig'\n")
    modules.write("p_sub_pkg", "", package=True)
    fake = types.ModuleType("p_sub_pkg.sub")
    reg.register("p_sub_pkg.sub", fake)
    reg.apply()
    import p_sub_pkg.sub  # noqa: F401 - the deferred replacement goes in on this import

    assert sys.modules["p_sub_pkg.sub"] is fake
    assert sys.modules["p_sub_pkg"].sub is fake
    reg.revert()
    parent = sys.modules["p_sub_pkg"]
    assert sys.modules["p_sub_pkg.sub"].value == "orig"
    assert parent.sub is sys.modules["p_sub_pkg.sub"]


def test_a_functions_doc_is_restored_exactly_without_a_warning(reg, modules, caplog):
    mod = modules.load("p_doc", "def func():\n    'the original doc'\n")
    reg.register("p_doc.func.__doc__", "patched doc")
    reg.apply()
    assert mod.func.__doc__ == "patched doc"
    with caplog.at_level("WARNING", logger="mindspeed_ms"):
        reg.revert()
    assert mod.func.__doc__ == "the original doc"
    assert not [r for r in caplog.records if "someone else" in r.getMessage()]


PROPERTY = """
class Holder:
    @property
    def level(self):
        return self._level

    @level.setter
    def level(self, value):
        self._level = value

obj = Holder()
obj.level = "first"
"""


def test_an_instance_property_is_set_and_restored_through_the_property(reg, modules, caplog):
    mod = modules.load("p_inst", PROPERTY)
    reg.register("p_inst.obj.level", "patched")
    reg.apply()
    assert mod.obj.level == "patched"
    with caplog.at_level("WARNING", logger="mindspeed_ms"):
        reg.revert()
    assert mod.obj.level == "first"
    assert "level" not in vars(mod.obj)
    assert not caplog.records


def test_two_registries_reverted_out_of_order_leave_the_original(make_registry, modules):
    mod = modules.load("p_two", "def func():\n    return 'orig'\n")
    original = mod.func
    first, second = make_registry("first"), make_registry("second")
    first.register("p_two.func", lambda: "first")
    second.register("p_two.func", lambda: "second")
    first.apply()
    second.apply()
    assert mod.func() == "second"
    first.revert()
    assert mod.func() == "second"
    second.revert()
    assert mod.func is original


def test_a_wrap_returning_none_fails_apply_naming_it_and_rolls_back(reg, modules):
    mod = modules.load("p_none", "def func():\n    return 'orig'\n\ndef other():\n    return 'orig'\n")
    original = mod.other
    reg.register("p_none.other", lambda: "new")

    def forgetful_wrapper(fn):
        def inner():
            return fn()
        # no return: the classic slip

    reg.register("p_none.func", forgetful_wrapper)
    with pytest.raises(PatchApplyError, match="forgetful_wrapper.*returned None") as info:
        reg.apply()
    assert info.value.target == "p_none.func"
    assert mod.other is original
    assert mod.func() == "orig"


def test_create_dummy_attribute_under_an_existing_class_is_a_stub_removed_on_revert(reg, modules):
    mod = modules.load("p_cls", DESCRIPTORS)
    reg.register("p_cls.Klass.added", lambda self: "stub", create_dummy=True)
    reg.apply()
    assert mod.Klass().added() == "stub"
    assert reg.status()[0].stub is True
    reg.revert()
    assert "added" not in vars(mod.Klass)


def test_create_dummy_under_a_missing_class_member_is_a_typed_error(reg, modules):
    from mindspeed_ms.errors import TargetNotFoundError

    mod = modules.load("p_cls2", DESCRIPTORS)
    reg.register("p_cls2.Klass.Inner.attr", lambda: "x", create_dummy=True)
    with pytest.raises(PatchApplyError, match="'p_cls2.Klass' is not a module") as info:
        reg.apply()
    assert isinstance(info.value.__cause__, TargetNotFoundError)
    assert "p_cls2.Klass.Inner" not in sys.modules
    assert not hasattr(mod.Klass, "Inner")


def test_a_forwarding_module_with_a_cached_getattr_sees_apply_and_revert(reg, modules):
    # MSAdapter's `torch` forwards to `msadapter` through an lru_cache'd class __getattr__: a name read
    # before apply() must not keep answering the original afterwards
    import functools
    import types

    target = modules.load("fwd_target", "def full():\n    return 'original'\n")

    class Forwarding(types.ModuleType):
        @functools.cache  # noqa: B019 - the shape under test (MSAdapter's proxy caches the same way)
        def __getattr__(self, name):
            return getattr(target, name)

    proxy = Forwarding("fwd_proxy")
    sys.modules["fwd_proxy"] = proxy
    try:
        assert proxy.full() == "original"  # now cached
        reg.register("fwd_target.full", lambda: "patched")
        reg.apply()
        assert proxy.full() == "patched"
        reg.revert()
        assert proxy.full() == "original"
    finally:
        del sys.modules["fwd_proxy"]


def test_create_dummy_under_a_blocked_module_creates_stubs_instead_of_waiting(reg, tmp_path, monkeypatch):
    # MSAdapter installs a transformer_engine shim that we block; MindSpeed registers transformer_engine.pytorch.*
    # with create_dummy=True when TE is not installed: blocked means not installed, so the stubs go in
    shim = tmp_path / "blocked_te_shim"
    shim.mkdir()
    (shim / "__init__.py").write_text("raise RuntimeError('the shim must stay hidden')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg.block("blocked_te_shim")
    reg.register("blocked_te_shim.pytorch.LayerNorm", lambda: "replacement")  # no create_dummy: it waits
    reg.apply()
    assert [(s.state, s.stub) for s in reg.status() if not s.target == "blocked_te_shim"] == [("pending-import", False)]
    reg.revert()
    reg.unregister("blocked_te_shim.pytorch.LayerNorm")
    reg.register("blocked_te_shim.pytorch.Linear", None, create_dummy=True)
    reg.apply()
    states = {s.target: (s.state, s.stub) for s in reg.status()}
    assert states["blocked_te_shim.pytorch.Linear"] == ("applied", True)
    import blocked_te_shim.pytorch as stub

    assert callable(stub.Linear)
    reg.revert()
    assert "blocked_te_shim" not in sys.modules
    assert "blocked_te_shim.pytorch" not in sys.modules


def test_an_inherited_method_patched_on_a_subclass_can_be_installed_again(reg, modules):
    # MindSpeed-LLM patches mindspeed.op_builder.gmm_builder.GMMOpBuilder.load, inherited from
    # MindSpeedOpBuilder; a registration after apply() installs it again on top of itself
    mod = modules.load("inherit_again", """
class Base:
    def load(self):
        return "base"

class Child(Base):
    pass
""")

    def load_wrapper(fn):
        def load(self):
            return ("wrapped", fn(self))
        return load

    reg.register("inherit_again.Child.load", lambda self: "patched")
    reg.apply()
    assert mod.Child().load() == "patched"
    reg.register("inherit_again.Child.load", load_wrapper)
    reg.apply()
    assert mod.Child().load() == ("wrapped", "patched")
    assert reg.status()[0].state == "applied"
    reg.revert()
    assert "load" not in vars(mod.Child)
    assert mod.Child().load() == "base"


SENT_ACROSS = """
def rebuild(x):
    return ("original", x)
"""

REPLACEMENTS = """
def rebuild(x):
    return ("ours", x)
"""


def test_a_traced_replacement_pickles_as_the_function_it_counts(make_registry, modules):
    # MSAdapter's reduce_tensor sends multiprocessing.reductions.rebuild_tensor with every tensor a DataLoader worker
    # sends; under MINDSPEED_MS_TRACE the installed object is a counting shim, which pickle refused
    import pickle

    mod = modules.load("m_sent", SENT_ACROSS)
    ours = modules.load("m_sent_ours", REPLACEMENTS)
    traced = make_registry("traced", trace=True)
    traced.register("m_sent.rebuild", ours.rebuild)
    traced.apply()
    assert mod.rebuild is not ours.rebuild
    received = pickle.loads(pickle.dumps(mod.rebuild))
    assert received is ours.rebuild
    assert received(3) == ("ours", 3)


def test_a_traced_replacement_pickle_cannot_find_by_name_is_refused_as_pickle_refuses_it(make_registry, modules):
    import pickle

    mod = modules.load("m_sent_local", SENT_ACROSS)

    def local(x):
        return ("local", x)

    traced = make_registry("traced", trace=True)
    traced.register("m_sent_local.rebuild", local)
    traced.apply()
    with pytest.raises(pickle.PicklingError, match="local"):
        pickle.dumps(mod.rebuild)


def test_a_traced_replacement_copies_and_deep_copies_as_itself_as_a_function_does(make_registry, modules):
    # megatron's SharedExpertMLP deep-copies its TransformerConfig, whose init_method partials hold patched functions;
    # under MINDSPEED_MS_TRACE the counting shim (a wrapt proxy) raised NotImplementedError there
    import copy
    import functools

    mod = modules.load("m_copied", SENT_ACROSS)
    ours = modules.load("m_copied_ours", REPLACEMENTS)
    traced = make_registry("traced", trace=True)
    traced.register("m_copied.rebuild", ours.rebuild)
    traced.apply()
    shim = mod.rebuild
    assert shim is not ours.rebuild
    assert copy.copy(shim) is shim
    config = {"init_method": functools.partial(shim, 2)}
    copied = copy.deepcopy(config)
    assert copied["init_method"].func is shim
    assert copied["init_method"]() == ("ours", 2)
