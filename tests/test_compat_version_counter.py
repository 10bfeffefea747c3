"""mindspeed_ms.compat.version_counter: the write counts MindSpore's CPU backend does not make, made.

The comparisons with PyTorch are conformance cases (tests/conformance/cases/fix_version_counters.py); here the
module's own answers under MSAdapter: the owner of each kind of view, True where the count was made (every view
sharing the counter moved by one), False where a view names no owner (nothing moved), and a count on a tensor that
requires grad leaves autograd's record as it was.
"""

from __future__ import annotations

import sys

import pytest
from _helpers import json_lines, run_python, subprocess_env

SCRIPT = """
import json
import mindspeed_ms.adaptor  # noqa: F401
import torch
from mindspeed_ms.compat.version_counter import bump_version, memory_owner

a = torch.arange(24, dtype=torch.float32).reshape(4, 6) * 1.0
views = {"itself": lambda: a, "row": lambda: a[1], "column": lambda: a[:, 2], "view": lambda: a.view(24),
         "narrow": lambda: a.narrow(1, 2, 3), "unsqueeze": lambda: a.unsqueeze(0),
         "row_of_a_view": lambda: a.view(2, 12)[1], "view_of_a_row": lambda: a[1].view(2, 3),
         "select": lambda: a.select(0, 2), "chunk": lambda: a.chunk(2)[1]}
out = {}
for name, make in views.items():
    view = make()
    owner = memory_owner(view)
    before = (a._version, view._version)
    counted = bump_version(view)
    out[name] = {"owner_is_a": owner is a, "owner_none": owner is None, "counted": counted,
                 "moved": [a._version - before[0], view._version - before[1]]}
leaf = torch.zeros(3, requires_grad=True)
out["leaf"] = {"counted": bump_version(leaf), "version": leaf._version, "is_leaf": leaf.is_leaf,
               "grad_fn": leaf.grad_fn is None, "values": leaf.tolist()}
out["not_a_tensor"] = bump_version([1.0, 2.0])
# a buffer parameters alias through .data (megatron's distributed optimizer): its writes are not counted
from mindspeed_ms.compat.version_counter import ALIASED_BY_DATA
buffer, plain = torch.zeros(12), torch.zeros(12)
param = torch.nn.Parameter(torch.ones(2, 2))
param.data = buffer[4:8].view(2, 2)
before = (param._version, buffer._version)
out["aliased"] = {"marked": getattr(buffer, ALIASED_BY_DATA, False), "counted": bump_version(buffer[8:12]),
                  "moved": [param._version - before[0], buffer._version - before[1]],
                  "plain_marked": getattr(plain, ALIASED_BY_DATA, False), "plain_counted": bump_version(plain[8:12])}
# zero_ in host memory: the tensors it takes (a float32 tensor owning its memory, outside autograd's record)
from mindspeed_ms.compat.inplace import zero_on_host
owned = torch.ones(8) * 2.0
taken = {"owned": zero_on_host("zero_", owned), "slice": zero_on_host("zero_", (torch.ones(8) * 1.0)[2:6]),
         "float16": zero_on_host("zero_", torch.ones(4, dtype=torch.float16) * 1.0),
         "recorded": zero_on_host("zero_", torch.ones(3, requires_grad=True) * 2.0),
         "transposed": zero_on_host("zero_", (torch.ones(2, 3) * 1.0).t())}
out["zero_on_host"] = {"taken": taken, "zeroed": owned.tolist()}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def answers() -> dict:
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    return json_lines(run_python(sys.executable, "-c", SCRIPT, env=env))[-1]


@pytest.mark.parametrize("name", ["itself", "row", "column", "view", "narrow", "unsqueeze", "row_of_a_view",
                                  "view_of_a_row"])
def test_a_view_that_names_its_owner_is_counted_in_the_shared_counter(answers: dict, name: str) -> None:
    assert answers[name] == {"owner_is_a": True, "owner_none": False, "counted": True, "moved": [1, 1]}


@pytest.mark.parametrize("name", ["select", "chunk"])
def test_a_view_that_names_no_owner_says_so_and_counts_nothing(answers: dict, name: str) -> None:
    assert answers[name]["owner_none"] is True
    assert answers[name]["counted"] is False
    assert answers[name]["moved"] == [0, 0]


def test_a_leaf_that_requires_grad_is_counted_outside_autograds_record(answers: dict) -> None:
    assert answers["leaf"] == {"counted": True, "version": 1, "is_leaf": True, "grad_fn": True,
                               "values": [0.0, 0.0, 0.0]}


def test_what_is_not_a_tensor_is_not_counted(answers: dict) -> None:
    assert answers["not_a_tensor"] is False


def test_a_buffer_parameters_alias_through_data_is_marked_and_its_writes_are_not_counted(answers: dict) -> None:
    assert answers["aliased"] == {"marked": True, "counted": False, "moved": [0, 0], "plain_marked": False,
                                  "plain_counted": True}


def test_zero_in_host_memory_takes_only_tensors_that_own_their_float32_memory_outside_autograd(answers: dict) -> None:
    """compat.inplace.zero_on_host (``Tensor.zero_``'s host path; its results against PyTorch are conformance cases):
    a float32 tensor that owns its memory is zeroed there; a view, float16, a tensor autograd records: not taken."""
    found = answers["zero_on_host"]
    assert found["taken"] == {"owned": True, "slice": False, "float16": False, "recorded": False, "transposed": False}
    assert found["zeroed"] == [0.0] * 8
