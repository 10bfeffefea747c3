"""ViewRebaseError: a backward through a view whose base was written in place after the view was taken is refused
with a typed error saying what to do (MindSpore's engine stops with an internal RuntimeError)."""

from __future__ import annotations

import sys

import pytest
from _helpers import run_python, subprocess_env

from mindspeed_ms.errors import ViewRebaseError


def test_the_view_rebase_stop_is_a_typed_error_and_a_later_backward_works() -> None:
    out = run_python(sys.executable, "-c", """
import mindspeed_ms.adaptor
import torch
from mindspeed_ms.errors import ViewRebaseError
a = torch.ones(3, requires_grad=True)
y = a * 2
p = y[1]
y.mul_(3)
for call in (lambda: p.sum().backward(retain_graph=True), lambda: torch.autograd.grad(p.sum(), a)):
    try:
        call()
    except ViewRebaseError as error:
        print("refused:", isinstance(error, RuntimeError), "clone() it before" in str(error))
c = torch.ones(2, requires_grad=True)
(c * 3).sum().backward()
print("later:", c.grad.tolist())
""", env=subprocess_env(MINDSPEED_AI_FRAMEWORK="mindspore"), timeout=300)
    assert out.count("refused: True True") == 2
    assert "later: [3.0, 3.0]" in out


def test_the_error_names_the_op_and_the_workaround() -> None:
    error = ViewRebaseError("torch.autograd.backward")
    assert isinstance(error, RuntimeError)
    assert error.target == "torch.autograd.backward"
    with pytest.raises(RuntimeError, match="Take the view after the in-place write"):
        raise error
