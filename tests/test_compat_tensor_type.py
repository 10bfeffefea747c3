"""mindspeed_ms.compat.tensor_type: Tensor.type() names CPU tensors as PyTorch does, CUDA names only inside
megatron's optimizers' type checks (their constructors run in tests/test_compat_optim.py, test_parity.py and
test_parallel_training.py on both backends)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from _helpers import ROOT, reference_python, subprocess_env

from mindspeed_ms.compat import tensor_type


def test_the_scope_lasts_for_the_call_and_ends_on_an_exception() -> None:
    seen: list[bool] = []

    def check(fail: bool) -> str:
        seen.append(tensor_type.in_cuda_type_scope())
        if fail:
            raise TypeError("Wrapped parameters must be one of torch.cuda.FloatTensor")
        return tensor_type.type_name("FloatTensor", is_cuda=False)

    wrapped = tensor_type.cuda_type_names_wrapper(check)
    assert wrapped(False) == "torch.cuda.FloatTensor"
    with pytest.raises(TypeError):
        wrapped(True)
    nested = tensor_type.cuda_type_names_wrapper(lambda: (wrapped(False), tensor_type.in_cuda_type_scope()))
    assert nested() == ("torch.cuda.FloatTensor", True)
    assert seen == [True, True, True]
    assert not tensor_type.in_cuda_type_scope()
    assert tensor_type.type_name("HalfTensor", is_cuda=False) == "torch.HalfTensor"
    assert tensor_type.type_name("HalfTensor", is_cuda=True) == "torch.cuda.HalfTensor"


def test_scoped_type_method_answers_cuda_names_inside_only_and_leaves_conversions() -> None:
    calls: list[tuple[Any, ...]] = []

    def type_method(self: Any, dtype: Any = None, non_blocking: bool = False) -> Any:
        calls.append((dtype, non_blocking))
        return "torch.LongTensor" if dtype is None else f"converted to {dtype}"

    scoped = tensor_type.scoped_cuda_type_name_wrapper(type_method)
    inside = tensor_type.cuda_type_names_wrapper(lambda: (scoped(None), scoped(None, "torch.HalfTensor")))
    assert scoped(None) == "torch.LongTensor"
    assert inside() == ("torch.cuda.LongTensor", "converted to torch.HalfTensor")
    assert calls[-1] == ("torch.HalfTensor", False)


SCRIPT = """
import json
import mindspeed_ms.adaptor  # noqa: F401
import torch
import megatron.core.optimizer.optimizer as optimizer
from mindspeed_ms.compat.tensor_type import cuda_type_names_wrapper

x = torch.ones(2, 3)
names = [x.type(), x.long().type(), x.half().type(), x.bool().type(), torch.nn.Parameter(x).type()]
inside = cuda_type_names_wrapper(lambda: [x.type(), x.bfloat16().type()])()
wrapped = hasattr(optimizer.Float16OptimizerWithFloat16Params.__init__, "__wrapped__")
converted = str(x.type("torch.LongTensor").dtype)
print(json.dumps({"names": names, "inside": inside, "after": x.type(), "converted": converted,
                  "megatron_wrapped": wrapped}))
"""


@pytest.mark.parametrize("side", ["mindspore", "pytorch"])
def test_type_names_on_both_backends(side: str) -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT), MINDSPEED_AI_FRAMEWORK=side)
    python = sys.executable if side == "mindspore" else reference_python()
    done = subprocess.run([python, "-c", textwrap.dedent(SCRIPT)], capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["names"] == ["torch.FloatTensor", "torch.LongTensor", "torch.HalfTensor", "torch.BoolTensor",
                               "torch.FloatTensor"]
    assert result["inside"] == ["torch.cuda.FloatTensor", "torch.cuda.BFloat16Tensor"]
    assert result["after"] == "torch.FloatTensor"
    assert result["converted"].lower().endswith("int64")
    assert result["megatron_wrapped"]
