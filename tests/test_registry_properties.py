"""Property test: any register/apply/revert sequence ends, after a final revert, where it started."""

from __future__ import annotations

import importlib
import sys
import types

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindspeed_ms import PatchRegistry
from mindspeed_ms.errors import AdaptationError

KINDS = ("function", "staticmethod", "classmethod", "property", "method", "inherited")


def build_source(spec):
    """Module source for a list of (class or module level, member kind) pairs."""
    lines = ["class Base:", "    def inherited(self):", "        return 'base'", ""]
    for index, kind in enumerate(spec):
        if kind == "function":
            lines += [f"def f{index}(x):", f"    return {index}", ""]
    lines.append("class C(Base):")
    lines.append("    pass")
    for index, kind in enumerate(spec):
        if kind == "staticmethod":
            lines += ["    @staticmethod", f"    def m{index}(x):", f"        return {index}"]
        elif kind == "classmethod":
            lines += ["    @classmethod", f"    def m{index}(cls, x):", f"        return {index}"]
        elif kind == "property":
            lines += ["    @property", f"    def m{index}(self):", f"        return {index}"]
        elif kind == "method":
            lines += [f"    def m{index}(self, x):", f"        return {index}"]
    return "\n".join(lines) + "\n"


def targets_for(name, spec):
    out = []
    for index, kind in enumerate(spec):
        if kind == "function":
            out.append(f"{name}.f{index}")
        elif kind == "inherited":
            out.append(f"{name}.C.inherited")
        else:
            out.append(f"{name}.C.m{index}")
    return out


def state_of(modules):
    snap = {}
    for module in modules:
        snap[module.__name__] = dict(vars(module))
        snap[module.__name__ + ".C"] = dict(vars(module.C))
        snap[module.__name__ + ".Base"] = dict(vars(module.Base))
    snap["sys.modules"] = {name: sys.modules.get(name) for name in ("prop_mod_0", "prop_mod_1", "prop_user")}
    return snap


def replacement(*args, **kwargs):
    return "replaced"


def noop_wrapper(fn):
    return lambda *a, **k: fn(*a, **k)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("register"), st.integers(0, 30), st.sampled_from(["replace", "wrap", "force"])),
        st.tuples(st.just("apply"), st.just(0), st.just("")),
        st.tuples(st.just("revert"), st.just(0), st.just("")),
        st.tuples(st.just("unregister"), st.integers(0, 30), st.just("")),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=st.lists(st.lists(st.sampled_from(KINDS), min_size=1, max_size=5), min_size=2, max_size=2),
       ops=operations)
def test_random_sequences_end_identical_to_the_snapshot(spec, ops):
    made = []
    for index, members in enumerate(spec):
        name = f"prop_mod_{index}"
        module = types.ModuleType(name)
        exec(build_source(members), module.__dict__)
        sys.modules[name] = module
        made.append(module)
    user = types.ModuleType("prop_user")
    for module in made:
        for attribute, value in list(vars(module).items()):
            if attribute.startswith("f"):
                user.__dict__[attribute] = value  # a `from prop_mod_i import f...` alias
    sys.modules["prop_user"] = user
    all_targets = [t for i, members in enumerate(spec) for t in targets_for(f"prop_mod_{i}", members)]
    before = state_of(made)
    user_before = dict(vars(user))
    registry = PatchRegistry("property")
    try:
        for op, number, flavour in ops:
            target = all_targets[number % len(all_targets)]
            try:
                if op == "register":
                    if flavour == "wrap":
                        registry.register(target, noop_wrapper)
                    else:
                        registry.register(target, replacement, force_patch=flavour == "force")
                elif op == "apply":
                    registry.apply()
                elif op == "revert":
                    registry.revert()
                elif target in registry:
                    registry.unregister(target)
            except AdaptationError:
                pass  # conflicts are expected in random sequences; the invariant is the end state
        registry.revert()
        after = state_of(made)
        for key, namespace in before.items():
            assert after[key].keys() == namespace.keys(), key
            for attribute, value in namespace.items():
                assert after[key][attribute] is value, (key, attribute)
        assert dict(vars(user)) == user_before
    finally:
        registry.revert()
        for name in ("prop_mod_0", "prop_mod_1", "prop_user"):
            sys.modules.pop(name, None)
        importlib.invalidate_caches()
