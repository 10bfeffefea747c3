"""mindspeed_ms.compat._function_checks (optional C) against function_grads' Python: the custom-Function runner's
per-call reads (the inputs' shapes and dtypes, the saved tensors' versions) give the same values and raise the same
errors; the version check says "unchanged" exactly where the Python check does not raise; the gradients it passes on
are exactly what checked_gradients returns, and it hands every other case (a count to trim or refuse, a gradient for
a non-tensor, one to sum or cast, a failed read) back to checked_gradients. Stand-in tensors (objects with MindSpore's
``_shape``/``_dtype``/``_version`` attributes): no MindSpore in this process. The conformance families
ops_autograd_function and ops_autograd_ctx run the whole path against PyTorch."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from mindspeed_ms.compat import function_grads
from mindspeed_ms.compat.errors import TorchRefusalError


def test_the_checks_are_built_by_the_install() -> None:
    assert function_grads.ACCELERATED, \
        "mindspeed_ms.compat._function_checks is missing: pip install -e . needs a C compiler"
    assert function_grads.input_metadata is not function_grads.python_input_metadata
    assert function_grads.saved_versions is not function_grads.python_saved_versions


#: the C functions (function_grads binds them where the module is built: the test above)
compiled = SimpleNamespace(inputs=function_grads.input_metadata, versions=function_grads.saved_versions,
                           unchanged=function_grads.unchanged_versions, passed=function_grads.passed_gradients)


class DType:
    """A dtype whose ``!=`` is not identity (two objects may be equal), as MindSpore's compare by value."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DType) and other.name == self.name

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.name)


F32, F16 = DType("float32"), DType("float16")


class Tensor:
    def __init__(self, shape: tuple[int, ...], dtype: Any = F32, version: Any = 0) -> None:
        self._shape, self._dtype, self._version = shape, dtype, version
        self.shape, self.dtype = shape, dtype

    def sum(self, dim: Any, keepdim: bool = False) -> Tensor:
        dims = (dim,) if isinstance(dim, int) else dim
        shape = tuple(1 if i in dims else n for i, n in enumerate(self._shape)) if keepdim else \
            tuple(n for i, n in enumerate(self._shape) if i not in dims)
        return Tensor(shape, self._dtype)

    def to(self, dtype: Any) -> Tensor:
        return Tensor(self._shape, dtype)


class SubTensor(Tensor):
    pass


class Broken(Tensor):
    """A tensor whose reads fail (not with AttributeError)."""

    @property  # type: ignore[override]
    def _version(self) -> Any:
        raise RuntimeError("version read failed")

    @_version.setter
    def _version(self, value: Any) -> None:
        pass


class NoVersion:
    pass


def _both(function: str, python: str, *args: Any) -> tuple[Any, Any]:
    out = []
    for implementation in (getattr(compiled, function), getattr(function_grads, python)):
        try:
            out.append(("value", implementation(*args)))
        except Exception as error:  # noqa: BLE001
            out.append(("raised", type(error)))
    return out[0], out[1]


def test_input_metadata_as_python() -> None:
    a, b, c = Tensor((2, 3)), SubTensor((4,), F16), Tensor(())
    for args in [(), (a,), (a, 1, None, "x", b, c), (None, 1.5), (b, b)]:
        got, want = _both("inputs", "python_input_metadata", args, Tensor)
        assert got == want
        assert got[0] == "value"
        assert all(g is None or (g[0] is arg._shape and g[1] is arg._dtype) for g, arg in zip(got[1], args))

    class NoShape(Tensor):
        def __getattribute__(self, name: str) -> Any:
            if name == "_shape":
                raise ValueError("no shape")
            return object.__getattribute__(self, name)

    got, want = _both("inputs", "python_input_metadata", (a, NoShape((1,))), Tensor)
    assert got == want == ("raised", ValueError)


def test_saved_versions_as_python() -> None:
    two = (Tensor((1,), version=3), None, NoVersion(), Tensor((2,), version=0))
    for saved in [(), (Tensor((1,), version=3),), two]:
        got, want = _both("versions", "python_saved_versions", saved)
        assert got == want
        assert got[0] == "value"
        assert isinstance(got[1], tuple)
    got, want = _both("versions", "python_saved_versions", [Tensor((1,), version=5), None])
    assert got == want == ("value", (5, None))
    got, want = _both("versions", "python_saved_versions", (Tensor((1,)), Broken((1,))))
    assert got == want == ("raised", RuntimeError)


class Ctx:
    pass


def _python_check_raises(saved: tuple[Any, ...], versions: Any) -> bool:
    try:
        function_grads.check_versions(Ctx(), saved, versions)
    except Exception:  # noqa: BLE001
        return True
    return False


class NotEqualToItself:
    """``x != x`` is true (as a NaN): the check compares with ``!=``, not identity."""

    def __ne__(self, other: object) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


def test_unchanged_exactly_where_the_python_check_passes() -> None:
    t1, t2 = Tensor((2,), version=1), Tensor((3,), version=4)
    weird = NotEqualToItself()
    cases = [
        ((t1, t2), (1, 4), True),
        ((t1, t2), (1, 5), False),
        ((t1, t2), (None, 4), True),
        ((t1, t2), (None, None), True),
        ((t1, t2), (1,), True),  # zip stops at the shorter
        ((t1,), (1, 9), True),
        ((t1, Broken((1,))), (1, 2), False),  # a failed read: the Python check raises
        ((t1, NoVersion()), (1, 2), False),
        ((Tensor((1,), version=weird),), (weird,), False),
    ]
    for saved, versions, unchanged in cases:
        assert compiled.unchanged(saved, versions) is unchanged, (saved, versions)
        assert _python_check_raises(saved, versions) is not unchanged
    assert compiled.unchanged([t1], (1,)) is False  # not tuples: the Python check decides
    assert compiled.unchanged((t1,), [1]) is False


def _checked(inputs: list[Any], needed: Any, result: Any) -> tuple[str, Any]:
    try:
        return "value", function_grads.checked_gradients("FBackward", inputs, needed, result)
    except Exception as error:  # noqa: BLE001
        return "raised", type(error)


def test_passed_gradients_are_exactly_what_checked_gradients_returns() -> None:
    a, b = Tensor((2, 3)), Tensor((3,), F16)
    meta = function_grads.python_input_metadata((a, b, 7), Tensor)
    ga, gb = Tensor((2, 3)), Tensor((3,), DType("float16"))  # an equal dtype, another object
    fast = [  # checked_gradients only passes these on
        (meta, (True, True, False), (ga, gb, None)),
        (meta, (True, False, False), (ga, gb, None)),  # gb dropped: its input needs no gradient
        (meta, (False, False, False), (ga, gb, None)),
        (meta, (True, True, False), (None, None, None)),
        (meta[:1], (True,), ga),  # one gradient, not a tuple
        (meta[:1], (False,), ga),
        ([], (), ()),
    ]
    for inputs, needed, result in fast:
        got = compiled.passed(inputs, needed, result)
        kind, want = _checked(inputs, needed, result)
        assert got is not None
        assert kind == "value"
        assert len(got) == len(want)
        assert all(g is w for g, w in zip(got, want)), (inputs, needed, result)
    other = [  # checked_gradients sums, casts, trims or raises: the C hands them back
        (meta, (True, True, False), (Tensor((4, 2, 3)), gb, None)),  # summed to (2, 3)
        (meta, (True, True, False), (Tensor((2, 1)), gb, None)),  # refused: cannot be summed to (2, 3)
        (meta, (True, True, False), (ga, Tensor((3,), F32), None)),  # cast to float16
        (meta, (True, True, False), (ga, gb, None, None)),  # a trailing None trimmed
        (meta, (True, True, False), (ga, gb, None, ga)),  # too many gradients
        (meta, (True, True, False), (ga, gb)),  # too few
        (meta, (True, True, False), (ga, gb, Tensor(()))),  # a gradient for the non-tensor input
        (meta, (True, True), (ga, gb, None)),  # needed shorter than the inputs
        (meta, [True, True, False], (ga, gb, None)),  # needed not a tuple
        (meta, (True, True, False), (ga, NoVersion(), None)),  # not a tensor: the read fails
        (tuple(meta), (True, True, False), (ga, gb, None)),  # inputs not a list
    ]
    for inputs, needed, result in other:
        assert compiled.passed(inputs, needed, result) is None, (inputs, needed, result)
    assert _checked(*other[0])[0] == "value"
    assert _checked(*other[0])[1][0]._shape == (2, 3)
    assert _checked(*other[1]) == ("raised", TorchRefusalError)
    assert _checked(*other[2])[1][1]._dtype == F16
    assert _checked(*other[4]) == ("raised", TorchRefusalError)
    assert _checked(*other[6]) == ("raised", TorchRefusalError)
