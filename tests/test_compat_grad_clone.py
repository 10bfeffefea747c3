"""mindspeed_ms.compat.grad_clone: the wrappers' decisions, on stand-in tensors. The conformance cases
(tests/conformance/cases/fix_grad_clone.py) compare the results and gradients with real PyTorch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from mindspeed_ms.compat.grad_clone import (
    GradDTypeError,
    RetainGradError,
    add_wrapper,
    requires_grad_wrapper,
    retain_grad,
    retains_grad,
)


@dataclass
class FakeTensor:
    """What the wrappers look at: dtype kind, grad flags, hooks, the kept gradient."""

    floating: bool = True
    requires_grad: bool = True
    is_leaf: bool = False
    hooks: list[Callable[[Any], Any]] = field(default_factory=list)
    _grad: Any = None

    def is_floating_point(self) -> bool:
        return self.floating

    def is_complex(self) -> bool:
        return False

    @property
    def dtype(self) -> str:
        return "Float32" if self.floating else "Int64"

    def register_hook(self, hook: Callable[[Any], Any]) -> None:
        self.hooks.append(hook)


class Grad(float):
    """A gradient stand-in: clone() returns an equal copy."""

    def clone(self) -> Grad:
        return Grad(self)


def test_requires_grad_of_an_integer_tensor_raises_pytorchs_runtime_error() -> None:
    calls: list = []

    def original(self: FakeTensor, flag: bool = True) -> FakeTensor:
        calls.append(flag)
        return self

    checked = requires_grad_wrapper(original)
    with pytest.raises(GradDTypeError) as caught:
        checked(FakeTensor(floating=False))
    assert isinstance(caught.value, RuntimeError)
    assert caught.value.dtype == "Int64"
    assert "only Tensors of floating point dtype can require gradients" in str(caught.value)
    assert calls == []
    integer = FakeTensor(floating=False)
    assert checked(integer, False) is integer
    assert calls == [False]
    floating = FakeTensor()
    assert checked(floating) is floating
    assert calls == [False, True]


def test_retain_grad_keeps_and_accumulates_through_one_hook() -> None:
    y = FakeTensor()
    retained = retains_grad.fget
    assert retained is not None
    assert not retained(y)
    retain_grad(y)
    retain_grad(y)
    assert len(y.hooks) == 1
    assert retained(y)
    assert y.hooks[0](Grad(2.0)) is None  # the hook does not change the gradient passed on
    y.hooks[0](Grad(3.0))
    assert y._grad == 5.0


def test_retain_grad_of_a_leaf_adds_no_hook_and_without_grad_raises() -> None:
    leaf = FakeTensor(is_leaf=True)
    retain_grad(leaf)
    assert leaf.hooks == []
    with pytest.raises(RetainGradError) as caught:
        retain_grad(FakeTensor(requires_grad=False))
    assert isinstance(caught.value, RuntimeError)


def test_add_of_non_tensors_passes_through() -> None:
    seen: list = []

    def original(a: Any, b: Any, *args: Any, **kwargs: Any) -> str:
        seen.append((a, b, args, kwargs))
        return "sum"

    add = add_wrapper(original)
    assert add(1.0, 2.0, alpha=3) == "sum"
    assert seen == [(1.0, 2.0, (), {"alpha": 3})]
