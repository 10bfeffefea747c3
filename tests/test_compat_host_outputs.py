"""mindspeed_ms.compat.host_outputs: the host paths' results live in MindSpore's memory (``Tensor.from_numpy``
results, handed to autograd, corrupted the heap: ``corrupted size vs. prev_size`` at exit).

A MindSpore interpreter with the adaptor applied writes through the array into a new tensor, then runs gelu and the
bias add (both over host memory at these sizes) forward and backward in a loop with fresh leaves, and must exit
cleanly. (Accumulating into the same leaf's ``.grad`` over several backward passes aborts at exit on MindSpore's
CPU backend with or without these paths, mindspeed_ms's kernel provider disabled too: not tested here.)
"""

from __future__ import annotations

import sys

import pytest
from _helpers import ROOT, result_line, run_python, subprocess_env

_SCRIPT = '''
import json
import numpy as np
import mindspeed_ms.adaptor
import torch
from mindspeed_ms.compat.host_outputs import new_float32

tensor, array = new_float32((3, 70000))
array[...] = 2.5
same_memory = tensor.data_ptr() == array.ctypes.data and float(tensor.sum()) == 2.5 * 3 * 70000
torch.manual_seed(0)
x = torch.randn(128, 4, 256)
weight = torch.randn(128, 4, 256)
start = torch.randn(256)
grads = []
for _ in range(20):
    leaf, bias = x.clone().requires_grad_(), start.clone().requires_grad_()
    (torch.nn.functional.gelu(leaf + bias) * weight).sum().backward()
    grads.append((leaf.grad.numpy().copy(), bias.grad.numpy().copy()))
same = all(np.array_equal(a, grads[0][0]) and np.array_equal(b, grads[0][1]) for a, b in grads)
print("RESULT " + json.dumps({"same_memory": bool(same_memory), "repeatable": bool(same)}), flush=True)
'''


def test_host_path_results_are_mindspores_memory_and_the_process_exits_cleanly() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    out = run_python(sys.executable, "-c", _SCRIPT, "--ai-framework", "mindspore", env=env)
    assert result_line(out) == {"same_memory": True, "repeatable": True}


_KEPT_SCRIPT = '''
import functools
import gc
import json
import mindspore
import numpy as np
import mindspeed_ms.adaptor
import sys
import torch
from mindspeed_ms.compat import host_outputs
from mindspeed_ms.compat.host_memory import host_array

compiled = sys.argv[-1] == "compiled"
new_float32 = host_outputs.new_float32_function(compiled)


def described(array):
    face = array.__array_interface__
    return [face["data"][0], list(face["shape"]), face["strides"], face["typestr"], array.dtype.str]


cases = []
for shape in [(3, 4), (3, 4), (3, 4), [2, 5], (2, 5), (7,), (), (3, 4)]:
    tensor, array = new_float32(shape)
    array[...] = np.arange(array.size, dtype=np.float32).reshape(array.shape) + 0.5
    # the array new_float32 hands out (kept by address and shape) is the one host_array reads from the tensor
    cases.append({"shape": [int(n) for n in shape], "same": described(array) == described(host_array(tensor)),
                  "dtype": str(tensor.dtype), "device": str(tensor.device),
                  "tensor_shape": list(tensor.shape), "written": tensor.numpy().tolist() == array.tolist()})
    del tensor, array
    gc.collect()
# the C object and the Python function share the kept arrays: a block MindSpore hands back to the other path comes
# with the same array object
other = host_outputs.new_float32_function(not compiled)
shared = []
for _ in range(3):
    tensor, first = new_float32((5, 6))
    address = tensor.data_ptr()
    del tensor
    gc.collect()
    tensor, second = other((5, 6))
    shared.append(tensor.data_ptr() == address and first is second)
    del tensor, first, second
    gc.collect()
# a profile books MindSpore's Empty op to MindSpore (the C object raises the events the interpreter raises)
import cProfile, pstats
profile = cProfile.Profile()
profile.enable()
new_float32((4, 3))
profile.disable()
profiled = [name for _, _, name in pstats.Stats(profile).stats]
# new_empty: the host index operands' int32 / int64 / bool tensors (and float32), writable through host memory
empties = []
for dtype, value in ((mindspore.int32, 7), (mindspore.int64, -3), (mindspore.bool_, True), (mindspore.float32, 0.5)):
    made = host_outputs.new_empty((2, 3), dtype)
    host_array(made)[...] = value
    empties.append([str(made.dtype), list(made.shape), str(made.device), made.numpy().tolist() == [[value] * 3] * 2])
# where MindSpore has no such entry: mint.empty, the same kind of tensor
fallback = host_outputs._call_empty(functools.partial(mindspore.mint.empty, dtype=mindspore.float32, device="CPU"),
                                    (2, 3))
entry = host_outputs._call_empty(host_outputs._empty(), (2, 3))
same_kind = [(tuple(t.shape), str(t.dtype), str(t.device), t.is_contiguous()) for t in (fallback, entry)]
print("RESULT " + json.dumps({"cases": cases, "shared": shared, "kind": type(new_float32).__name__,
                              "same_kind": same_kind[0] == same_kind[1],
                              "profiled_empty": any("pyboost_empty" in name for name in profiled),
                              "empties": empties,
                              "entry": type(host_outputs._empty()).__name__,
                              "default": host_outputs.new_float32 is host_outputs.new_float32_function()}),
      flush=True)
'''


@pytest.mark.parametrize("path", ["compiled", "python"])
def test_new_float32s_kept_arrays_are_the_arrays_of_the_tensors_it_returns(path: str) -> None:
    """new_float32 keeps its arrays by (address, shape): a new tensor at a block MindSpore hands back (the same
    shape asked again) gets the array host_array reads from it (address, shape, strides, dtype); a list (the
    general reads) and a 0-d shape too, and a write through the array is in the tensor. Both paths (the C object,
    the default where built, and the Python function) keep the same arrays, and both call MindSpore's Empty op at
    its C entry (float32 tensors on the CPU)."""
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    out = run_python(sys.executable, "-c", _KEPT_SCRIPT, "--ai-framework", "mindspore", path, env=env)
    result = result_line(out)
    cases = result["cases"]
    assert [case["tensor_shape"] for case in cases] == [case["shape"] for case in cases]
    assert all(case["same"] and case["written"] for case in cases), cases
    assert {(case["dtype"], case["device"]) for case in cases} == {("Float32", "cpu")}
    assert result["shared"] == [True] * 3
    # the pinned MindSpore has the Empty op's C entry (a tuple naming it): a MindSpore without it is noticed here
    assert result["entry"] == "tuple"
    assert result["same_kind"]
    assert result["profiled_empty"]
    assert result["empties"] == [["Int32", [2, 3], "cpu", True], ["Int64", [2, 3], "cpu", True],
                                 ["Bool", [2, 3], "cpu", True], ["Float32", [2, 3], "cpu", True]]
    assert result["kind"] == ("NewFloat32" if path == "compiled" else "function")
    assert result["default"]
