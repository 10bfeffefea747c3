"""mindspeed_ms.compat.function_grads.own_function: our autograd Functions apply through MindSpore's engine entry
directly (no Python frame in front), a subclass applies itself, and a user's Function still gets PyTorch's checks.

Under MSAdapter (the adaptor applied): ``Function.apply`` is MindSpore's ``_Function.apply`` wrapped by
``apply_wrapper``, which hands our classes on unchanged; ``own_function()``'s ``apply`` is ``FunctionBase.apply``
bound to the class it is called on.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from _helpers import json_lines, run_python, subprocess_env

SCRIPT = """
import json
import mindspeed_ms.adaptor  # noqa: F401
import torch
from mindspore._c_expression import FunctionBase
from mindspeed_ms.compat import function_grads, gelu, host_attention, host_linear

own = function_grads.own_function()
ours = [host_linear._function(), gelu._function(), *host_attention._functions()]
facts = {
    "subclasses": all(issubclass(cls, own) for cls in ours),
    "engine_entry": all(cls.apply.__func__ is FunctionBase.apply and cls.apply.__self__ is cls for cls in ours),
}


class Doubled(host_linear._function()):
    pass


facts["subclass_binds_itself"] = Doubled.apply.__self__ is Doubled

x = torch.arange(12.0).reshape(3, 4).requires_grad_()
w = torch.ones(2, 4, requires_grad=True)
out = Doubled.apply(x * 1.0, w, None)
out.sum().backward()
facts["subclass_result"] = out.tolist()
facts["subclass_grad_w"] = w.grad.tolist()


class WrongShape(torch.autograd.Function):  # a user's Function: PyTorch's check of the gradient's shape
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, grad):
        return torch.ones(5)


try:
    WrongShape.apply(torch.ones(3, requires_grad=True)).sum().backward()
    facts["user_refused"] = ""
except RuntimeError as error:
    facts["user_refused"] = str(error)
print(json.dumps(facts))
"""


def test_our_functions_apply_through_the_engine_entry_and_users_keep_the_checks() -> None:
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    facts = json_lines(run_python(sys.executable, "-c", SCRIPT, env=env))[-1]
    assert facts["subclasses"], facts
    assert facts["engine_entry"], facts
    assert facts["subclass_binds_itself"], facts
    assert facts["subclass_result"] == [[6.0, 6.0], [22.0, 22.0], [38.0, 38.0]]
    assert facts["subclass_grad_w"] == [[12.0, 15.0, 18.0, 21.0]] * 2
    assert "returned an invalid gradient at index 0" in facts["user_refused"], facts


def test_every_function_of_ours_has_the_own_base() -> None:
    compat = Path(__file__).resolve().parent.parent / "mindspeed_ms" / "compat"
    for path in compat.glob("*.py"):
        text = path.read_text()
        for name, base in re.findall(r"^\s*class (\w+)\((\w+(?:\(\))?)\)", text, re.M):
            if name != "OwnFunction":
                assert base != "Function", f"{path.name}: class {name}(Function): use own_function() as its base"
        if path.name != "function_grads.py":
            assert "from msadapter.autograd import Function" not in text, path.name
