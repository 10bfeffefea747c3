"""mindspeed_ms.engine.passthrough.mark: an op's result with one attribute set (``Tensor.data``'s and ``detach()``'s
alias flag, ``Tensor.t()``'s view naming the matrix it transposes), as a C object and as a Python closure: the same
results, attributes, errors and binding either way, and the same as the Python wrappers they replaced."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from mindspeed_ms.engine import passthrough


@pytest.fixture(autouse=True, params=[True, False], ids=["c", "python"])
def compiled(request) -> Iterator[bool]:
    with passthrough.accelerator(request.param):
        yield request.param


class _Shaped:
    """A stand-in tensor: a ``_shape`` tuple; ``t()`` returns itself below 2 dimensions, as MindSpore may."""

    def __init__(self, *shape: int) -> None:
        self._shape = shape

    def t(self) -> Any:
        return self if len(self._shape) < 2 else _Shaped(*reversed(self._shape))


def _replaced_t(op: Any) -> Any:
    """The Python wrapper fast_matmul.transposed_view_wrapper was before: the reference for the first-argument mark."""

    def t(input: Any) -> Any:
        result = op(input)
        if len(input._shape) == 2 and result is not input:
            result.of = input
        return result

    return t


def test_a_value_is_set_on_every_result():
    marked = passthrough.mark(lambda *args, **kwargs: _Shaped(len(args), len(kwargs)), "alias", True)
    result = marked(1, 2, k=3)
    assert result._shape == (2, 1) and result.alias is True  # noqa: PT018


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)])
def test_the_first_argument_is_set_as_the_replaced_wrapper_set_it(shape):
    marked = passthrough.mark(_Shaped.t, "of", shape="_shape", ndim=2)
    reference = _replaced_t(_Shaped.t)
    given = _Shaped(*shape)
    result, expected = marked(given), reference(given)
    assert (result is given) == (expected is given)
    assert getattr(result, "of", None) is getattr(expected, "of", None)
    assert (getattr(result, "of", None) is given) == (len(shape) == 2)


def test_the_op_s_errors_and_a_failed_write_propagate():
    def failing(x: Any) -> Any:
        raise ValueError("op")

    with pytest.raises(ValueError, match="op"):
        passthrough.mark(failing, "alias", True)(1)
    with pytest.raises(AttributeError):  # an int takes no attribute
        passthrough.mark(abs, "alias", True)(-1)
    with pytest.raises(AttributeError):  # the first argument has no shape attribute
        passthrough.mark(list, "of", shape="_shape", ndim=2)(())


def test_it_binds_as_a_method_and_carries_the_op_s_name():
    class Owner(_Shaped):
        t = passthrough.mark(_Shaped.t, "of", shape="_shape", ndim=2)

    owner = Owner(2, 3)
    assert owner.t().of is owner
    assert Owner.t.__name__ == "t" and Owner.t.__wrapped__ is _Shaped.t  # noqa: PT018


def test_options_must_be_one_or_the_other():
    with pytest.raises(TypeError):
        passthrough.mark(abs, "alias")
    with pytest.raises(TypeError):
        passthrough.mark(abs, "alias", True, shape="_shape", ndim=2)
    with pytest.raises(TypeError):
        passthrough.mark(abs, "alias", shape="_shape")
    with pytest.raises(TypeError):
        passthrough.mark(1, "alias", True)  # type: ignore[arg-type]


def test_the_wrapper_and_its_value_are_collected():
    class Value:
        pass

    value = Value()
    marked = passthrough.mark(_Shaped, "alias", value)
    marked.cycle = marked  # a cycle through its __dict__ (C) or a reference of its own (Python)
    kept = weakref.ref(value)
    del marked, value
    gc.collect()
    assert kept() is None
