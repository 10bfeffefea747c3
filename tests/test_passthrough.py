"""mindspeed_ms.engine.passthrough: the pass-through wrappers of hot ops, in C and as Python closures.

Every behaviour test runs twice: with the C objects of ``_passthrough.c`` and with the Python closures (the same
results: return values, exceptions, their ``__context__``/``__cause__``, binding, names, warnings' attribution).
"""

from __future__ import annotations

import functools
import gc
import inspect
import pickle
import sys
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from mindspeed_ms.engine import PatchRegistry, passthrough


@pytest.fixture(autouse=True, params=[True, False], ids=["c", "python"])
def compiled(request) -> Iterator[bool]:
    with passthrough.accelerator(request.param):
        yield request.param


def test_the_extension_is_built_by_the_install():
    # .ci/run installs from scratch (pip install -e): this fails there if _passthrough.c did not compile
    assert passthrough.has_accelerator(), ("mindspeed_ms.engine._passthrough is missing: pip install -e . needs a C "
                                           "compiler")


def test_a_build_older_than_its_source_is_not_used():
    # the C module this process uses offers what passthrough.py was written for (a stale in-place build would not)
    assert passthrough.built_abi() == passthrough.ABI


def test_the_switch_chooses_the_kind(compiled):
    wrapper = passthrough.guard(len, catch=ValueError, on_error=repr)
    assert (type(wrapper).__name__ == "Guard") is compiled


def _op(a: int, b: int = 2, *, c: int = 3) -> tuple[int, int, int]:
    """The op's doc."""
    if a < 0:
        raise ValueError(f"negative {a}")
    if a == 0:
        raise KeyError("zero")
    return a, b, c


class _Translated(RuntimeError):
    pass


def _to_runtime(error: BaseException) -> Any:
    if isinstance(error, KeyError):
        raise error
    raise _Translated(str(error)) from error


def test_a_call_that_succeeds_passes_arguments_and_result():
    wrapper = passthrough.guard(_op, catch=(ValueError, KeyError), on_error=_to_runtime)
    assert wrapper(1) == (1, 2, 3)
    assert wrapper(1, 5, c=7) == (1, 5, 7)
    assert wrapper(a=4, c=0) == (4, 2, 0)


def test_a_caught_error_goes_to_on_error_while_it_is_handled():
    wrapper = passthrough.guard(_op, catch=(ValueError, KeyError), on_error=_to_runtime)
    with pytest.raises(_Translated, match="negative -1") as info:
        wrapper(-1)
    original = info.value.__cause__
    assert isinstance(original, ValueError)
    assert info.value.__context__ is original  # as `raise ... from error` inside an except block
    assert "_op" in [frame.function for frame in inspect.getinnerframes(original.__traceback__)]
    with pytest.raises(KeyError) as again:
        wrapper(0)
    assert again.value.__context__ is None  # re-raised itself: not its own context
    assert sys.exc_info() == (None, None, None)  # nothing left as being handled


def test_an_error_of_another_class_passes_untouched():
    wrapper = passthrough.guard(_op, catch=KeyError, on_error=_to_runtime)
    with pytest.raises(ValueError, match="negative") as info:
        wrapper(-3)
    assert info.value.__cause__ is None
    with pytest.raises(TypeError):
        wrapper()  # the op's own signature error


def test_on_error_may_return_a_result():
    wrapper = passthrough.guard(_op, catch=ValueError, on_error=lambda error: ("handled", str(error)))
    assert wrapper(-2) == ("handled", "negative -2")


def test_an_outer_handled_exception_is_put_back():
    wrapper = passthrough.guard(_op, catch=ValueError, on_error=lambda error: None)
    try:
        raise LookupError("outer")
    except LookupError as outer:
        assert wrapper(-1) is None
        assert sys.exc_info()[1] is outer


class _Flag:
    def __init__(self, value: bool) -> None:
        self.value, self.reads, self.fixes = value, 0, 0

    def read(self) -> bool:
        self.reads += 1
        return self.value

    def set(self, value: bool) -> None:
        self.fixes += 1
        self.value = value


def test_check_fixes_before_the_call_only_when_false():
    flag = _Flag(True)
    seen = []
    wrapper = passthrough.guard(lambda x: seen.append(flag.value) or x, check=flag.read,
                                fix=functools.partial(flag.set, True))
    assert wrapper(5) == 5
    assert (flag.reads, flag.fixes) == (1, 0)
    flag.value = False
    assert wrapper(6) == 6
    assert (flag.reads, flag.fixes, seen) == (2, 1, [True, True])


def test_check_and_catch_together_and_errors_of_the_check_propagate():
    flag = _Flag(False)
    wrapper = passthrough.guard(_op, catch=ValueError, on_error=_to_runtime, check=flag.read,
                                fix=functools.partial(flag.set, True))
    with pytest.raises(_Translated):
        wrapper(-1)
    assert flag.fixes == 1

    def broken() -> bool:
        raise OSError("check failed")

    failing = passthrough.guard(_op, check=broken, fix=flag.read)
    with pytest.raises(OSError, match="check failed"):
        failing(1)


def test_options_must_come_in_pairs():
    with pytest.raises(TypeError, match="go together"):
        passthrough.guard(_op, catch=ValueError)
    with pytest.raises(TypeError, match="go together"):
        passthrough.guard(_op, check=bool)
    with pytest.raises(TypeError, match="callable"):
        passthrough.guard(42, catch=ValueError, on_error=repr)


def test_the_wrapper_carries_the_op_s_name_doc_and_signature():
    wrapper = passthrough.guard(_op, catch=ValueError, on_error=_to_runtime)
    assert wrapper.__name__ == "_op"
    assert wrapper.__qualname__ == "_op"
    assert wrapper.__doc__ == "The op's doc."
    assert wrapper.__module__ == __name__
    assert wrapper.__wrapped__ is _op
    assert inspect.signature(wrapper) == inspect.signature(_op)


class _Host:
    def method(self, x: int) -> tuple[Any, int]:
        if x < 0:
            raise ValueError("refused")
        return self, x

    def __add__(self, other: int) -> int:
        return other + 1


def test_it_binds_as_a_method_in_a_class():
    class Owner(_Host):
        pass

    Owner.method = passthrough.guard(_Host.method, catch=ValueError, on_error=_to_runtime)
    Owner.__add__ = passthrough.guard(_Host.__add__, catch=ValueError, on_error=_to_runtime)
    owner = Owner()
    assert owner.method(3) == (owner, 3)
    bound = owner.method
    assert bound(4) == (owner, 4)
    assert bound.__self__ is owner
    assert Owner.method(owner, 5) == (owner, 5)  # looked up on the class: unbound, as a function
    assert owner + 1 == 2  # a special method through its slot
    with pytest.raises(_Translated):
        owner.method(-1)
    assert inspect.signature(owner.method) == inspect.signature(_Host().method)


def test_pickled_by_reference_as_a_function():
    restored = pickle.loads(pickle.dumps(_PICKLED))
    assert restored is _PICKLED


def _pickled_op(x: int) -> int:
    return x


_PICKLED = passthrough.guard(_pickled_op, catch=ValueError, on_error=_to_runtime)
_PICKLED.__qualname__ = "_PICKLED"


def test_the_wrapper_and_what_it_holds_are_collected():
    class Big:
        pass

    held = Big()
    ref = weakref.ref(held)
    box: list[Any] = []
    wrapper = passthrough.guard(functools.partial(id, held), catch=ValueError, on_error=box.append)
    box.append(wrapper)  # a cycle: wrapper -> on_error (box.append) -> box -> wrapper
    del held
    assert wrapper() == id(ref())
    del wrapper, box
    gc.collect()
    assert ref() is None


class _Tensorish:
    def __init__(self, leaf: bool, requires: bool, retained: bool | None = None) -> None:
        self._is_leaf, self._requires_grad, self._grad = leaf, requires, f"grad of {leaf}/{requires}/{retained}"
        if retained is not None:
            self._retains = retained


def _warn(frames: int) -> None:
    warnings.warn("non-leaf .grad", UserWarning, stacklevel=2 + frames)


def test_grad_read_warns_for_a_non_leaf_that_requires_grad_and_does_not_retain_it():
    read = passthrough.grad_read("_grad", "_is_leaf", "_requires_grad", "_retains", _warn)

    class Holder(_Tensorish):
        grad = property(read, passthrough.attr_write("_grad"))

    for leaf, requires, retained, warns in ((True, True, None, False), (False, False, None, False),
                                            (False, True, True, False), (False, True, False, True),
                                            (False, True, None, True)):
        holder = Holder(leaf, requires, retained)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert holder.grad == holder._grad
        assert len(caught) == int(warns), (leaf, requires, retained)
        if warns:
            assert caught[0].filename == __file__  # attributed to the code that read .grad
        holder.grad = "new"
        assert holder._grad == "new"
    with pytest.raises(AttributeError):
        read(object())


def test_attr_write_sets_through_descriptors():
    seen = []

    class Slotted:
        value = property(lambda self: None, lambda self, value: seen.append(value))

    passthrough.attr_write("value")(Slotted(), 7)
    assert seen == [7]


def test_calls_are_counted_in_c(compiled):
    before = passthrough.calls()
    wrapper = passthrough.guard(len, catch=ValueError, on_error=repr)
    reader = passthrough.grad_read("_grad", "_is_leaf", "_requires_grad", "_retains", _warn)
    writer = passthrough.attr_write("_grad")
    forked = passthrough.fork(len, len, "_dtype")
    marked = passthrough.mark(list, "_flag", True)
    holder = _Tensorish(True, True)
    for _ in range(3):
        wrapper(())
        reader(holder)
        writer(holder, 1)
        forked(())
        with pytest.raises(AttributeError):  # a list takes no attribute: counted all the same
            marked(())
    after = passthrough.calls()
    expected = 3 if compiled else 0
    kinds = ("Guard", "GradRead", "AttrWrite", "Fork", "Mark")
    assert {kind: after[kind] - before[kind] for kind in after} == dict.fromkeys(kinds, expected)


def test_stacked_guards_revert_and_apply_again_with_the_registry(tmp_path, monkeypatch):
    module = tmp_path / "pt_stacked_target.py"
    module.write_text("class T:\n    def view(self, n):\n        if n < 0:\n            raise ValueError('bad')\n"
                      "        return ('view', n)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import pt_stacked_target as target

    original = target.T.__dict__["view"]
    registry = PatchRegistry()

    def refusal(op: Any) -> Any:
        return passthrough.guard(op, catch=ValueError, on_error=_to_runtime)

    def doubled(op: Any) -> Any:
        @functools.wraps(op)
        def view(self: Any, n: int) -> Any:
            return op(self, 2 * n)

        return view

    registry.register("pt_stacked_target.T.view", refusal, kind="wrap")
    registry.register("pt_stacked_target.T.view", doubled, kind="wrap")
    for _ in range(2):
        registry.apply()
        assert target.T().view(2) == ("view", 4)
        with pytest.raises(_Translated):
            target.T().view(-1)
        assert [status.target for status in registry.status()] == ["pt_stacked_target.T.view"]
        registry.revert()
        assert target.T.__dict__["view"] is original
        with pytest.raises(ValueError, match="bad"):
            target.T().view(-1)
    sys.modules.pop("pt_stacked_target", None)


class _Typed:
    def __init__(self, dtype: Any) -> None:
        self._dtype = dtype


class _Untyped:
    pass


def _fast(*args: Any, **kwargs: Any) -> Any:
    return ("fast", args, kwargs)


def _slow(*args: Any, **kwargs: Any) -> Any:
    return ("slow", args, kwargs)


def test_fork_on_one_argument_s_attribute(compiled):
    forked = passthrough.fork(_fast, _slow, "_dtype", slow_when="bf16")
    assert forked(_Typed("bf16"), 1, dtype=None)[0] == "slow"
    assert forked(_Untyped())[0] == ("fast" if compiled else "slow")  # no attribute: getattr's None
    fast = forked(_Typed("f32"), 2, k=3)
    assert fast[1][1:] == (2,) and fast[2] == {"k": 3} and fast[0] == ("fast" if compiled else "slow")  # noqa: PT018
    assert forked(input=_Typed("f32"))[0] == "slow"  # nothing positional: the slow wrapper decides
    assert passthrough.fork(_fast, _slow, "_dtype")(_Untyped())[0] == "slow"  # slow_when None: a missing attribute


def test_fork_on_two_arguments_of_a_class(compiled):
    forked = passthrough.fork(_fast, _slow, "_dtype", cls=_Typed, unless="bool")
    common = "fast" if compiled else "slow"
    assert forked(_Typed("f32"), _Typed("f32"), 5)[0] == common
    assert forked(_Typed("f32"), _Typed("f16"))[0] == "slow"
    assert forked(_Typed("bool"), _Typed("bool"))[0] == "slow"  # the one shared value that still goes slow
    assert forked(_Typed("f32"), 2.0)[0] == "slow"
    assert forked(_Typed("f32"))[0] == "slow"
    assert forked(_Typed("f32"), other=_Typed("f32"))[0] == "slow"
    if compiled:
        assert forked.__wrapped__ is _fast
        assert forked.__name__ == "_fast"
    else:
        assert forked is _slow


def test_fork_binds_as_a_method(compiled):
    class Owner(_Typed):
        add = passthrough.fork(_fast, _slow, "_dtype", cls=_Typed)

    one, two = Owner("f32"), Owner("f32")
    result = one.add(two)
    assert result[0] == ("fast" if compiled else "slow")
    assert result[1] == (one, two)


def test_fork_on_a_test_of_the_first_argument(compiled):
    forked = passthrough.fork(_fast, _slow, test=lambda first: first > 0)
    common = "fast" if compiled else "slow"
    assert forked(3, 4)[0] == common
    assert forked(-3, 4)[0] == "slow"
    assert forked(x=3)[0] == "slow"
    with pytest.raises(TypeError, match="either attr or test"):
        passthrough.fork(_fast, _slow)
    with pytest.raises(TypeError, match="either attr or test"):
        passthrough.fork(_fast, _slow, "_dtype", test=bool)

    def failing(first: Any) -> bool:
        raise OSError("test failed")

    if compiled:
        with pytest.raises(OSError, match="test failed"):
            passthrough.fork(_fast, _slow, test=failing)(1)


def test_a_profiler_books_the_builtins_a_wrapper_calls_to_them(compiled):
    # MindSpore's kernels are builtins: called through a C wrapper, their time must not land in the caller's
    import cProfile
    import operator
    import pstats

    guarded = passthrough.guard(sorted, catch=ValueError, on_error=repr, check=sys.getrecursionlimit, fix=int)
    bound = passthrough.guard(list.append, catch=ValueError, on_error=repr)  # a method descriptor
    forked = passthrough.fork(sorted, _slow, test=operator.truth)
    values: list[int] = []

    def caller() -> None:
        for _ in range(5):
            guarded([3, 1, 2])
            bound(values, 1)
            forked([2, 1])

    profiler = cProfile.Profile()
    profiler.runcall(caller)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    calls = {key[2]: entry[1] for key, entry in stats.items() if key[0] == "~"}
    assert calls["<built-in method builtins.sorted>"] == (10 if compiled else 5)  # slow is _slow in Python
    assert calls["<method 'append' of 'list' objects>"] == 5
    assert calls["<built-in method sys.getrecursionlimit>"] == 5  # check=
    assert calls.get("<built-in method _operator.truth>") == (5 if compiled else None)  # test= (C only)
    assert values == [1] * 5
