"""mindspeed_ms.compat.host_add: ``a + b`` with both operands recording a gradient as one host Function, against real
PyTorch and against the add it replaces on MindSpore.

One script adds tensors that both require a gradient (megatron's embedding sum, ``Tensor.add``, ``torch.add``, a
tensor added to itself, two leaves, a chain of two adds) and adds the Function leaves alone (``alpha``, a broadcast,
float64, one operand without a gradient) under MSAdapter (the adaptor applied) and under the PyTorch reference
interpreter, and saves the sums and the gradients: the float32 sums and their gradients are PyTorch's bits. Under
MSAdapter the same adds also run through the wrapped add (our views and MindSpore's add): the Function gives its bits.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from _helpers import json_lines, run_python, run_reference, subprocess_env

SCRIPT = """
import os, sys
if os.environ.get("MINDSPEED_AI_FRAMEWORK") == "mindspore":
    import mindspeed_ms.adaptor  # noqa: F401
import numpy as np
import torch

ours = os.environ.get("MINDSPEED_AI_FRAMEWORK") == "mindspore"
given = dict(np.load(sys.argv[1]))
results, taken = {}, {}
wrapped = False
if ours:
    from mindspeed_ms.compat import host_add
    decide = host_add.taken

    def counted(*args):
        found = decide(*args)
        taken[name] = taken.get(name, 0) + found
        return found
    host_add.taken = counted
    plain_add = torch.Tensor.__add__.__wrapped__  # the add under ours: our views and MindSpore's add


def add(a, b, how):
    if wrapped:
        return plain_add(a, b) if how != "alpha" else plain_add(a, b, alpha=2)
    if how == "operator":
        return a + b
    if how == "method":
        return a.add(b)
    if how == "function":
        return torch.add(a, b)
    return torch.add(a, b, alpha=2)


def case(label, how="operator", first="a", second="b", dtype=torch.float32, second_grad=True, same=False,
         leaves=False, chain=False):
    global name
    name = label
    left = torch.tensor(given[first], dtype=dtype, requires_grad=True)
    right = torch.tensor(given[second], dtype=dtype, requires_grad=second_grad)
    a = left if leaves else left * 1.0
    b = a if same else (right if leaves or not second_grad else right * 1.0)
    out = add(a, b, how)
    if chain:  # the sum added to an operand again: two Functions, the operand's gradient from both
        out = add(out, a, how)
    results[label + ".out"] = out.detach().numpy()
    grad = torch.tensor(given["g"][..., :out.shape[-1]], dtype=dtype)
    out.backward(grad)
    results[label + ".grad_left"] = left.grad.numpy()
    if right.grad is not None and not same:
        results[label + ".grad_right"] = right.grad.numpy()


CASES = {"embeddings": {}, "method": dict(how="method"), "function": dict(how="function"), "itself": dict(same=True),
         "leaves": dict(leaves=True), "chain": dict(chain=True)}
KEPT = {"alpha": dict(how="alpha"), "broadcast": dict(second="bias"), "float64": dict(dtype=torch.float64),
        "one_gradient": dict(second_grad=False)}
for label, options in {**CASES, **KEPT}.items():
    case(label, **options)
if ours:
    wrapped = True
    for label, options in {**CASES, **KEPT}.items():
        case(label + "_plain", **options)

if len(sys.argv) > 2:
    np.savez(sys.argv[2], **results)
else:
    import json
    listed = {k: v.tolist() for k, v in results.items()}
    print(json.dumps({"taken": taken, **listed}))
"""

_RNG = np.random.default_rng(23)
INPUTS = {"a": _RNG.standard_normal((32, 4, 64)).astype(np.float32),
          "b": _RNG.standard_normal((32, 4, 64)).astype(np.float32),
          "bias": _RNG.standard_normal(64).astype(np.float32),
          "g": _RNG.standard_normal((32, 4, 64)).astype(np.float32)}
CASES = ("embeddings", "method", "function", "itself", "leaves", "chain")
KEPT = ("alpha", "broadcast", "float64", "one_gradient")


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("host_add")
    np.savez(folder / "inputs.npz", **INPUTS)
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    return json_lines(run_python(sys.executable, "-c", SCRIPT, str(folder / "inputs.npz"), env=env))[-1]


def test_adds_of_two_gradients_are_the_function_and_the_others_are_not(ours: dict) -> None:
    taken = ours["taken"]
    for case in CASES:
        assert taken[case] == (2 if case == "chain" else 1), (case, taken)
    for case in KEPT:
        assert taken.get(case, 0) == 0, (case, taken)
    assert not any(case.endswith("_plain") and count for case, count in taken.items()), taken


def test_sums_and_gradients_are_pytorchs_bits(ours: dict, tmp_path: Path) -> None:
    reference = run_reference(SCRIPT, INPUTS, tmp_path)
    assert set(reference) == {key for key in ours if "." in key and not key.split(".")[0].endswith("_plain")}
    assert {"itself.grad_left", "leaves.grad_right", "chain.grad_left", "one_gradient.grad_left"} <= set(reference)
    for key, expected in reference.items():
        got = np.asarray(ours[key], dtype=expected.dtype)
        assert got.shape == expected.shape, key
        if key.split(".")[0] in KEPT:  # MindSpore's kernels (the bias gradient's float32 sum, alpha's product)
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=key)
        else:
            np.testing.assert_array_equal(got, expected, err_msg=key)


def test_the_function_gives_the_bits_of_the_add_it_replaces(ours: dict) -> None:
    compared = 0
    for key in (key for key in ours if "." in key and key.split(".")[0] in CASES):
        case, _, what = key.partition(".")
        np.testing.assert_array_equal(np.asarray(ours[key], np.float32), np.asarray(ours[f"{case}_plain.{what}"],
                                                                                   np.float32), err_msg=key)
        compared += 1
    assert compared == 3 * len(CASES) - 1  # the tensor added to itself: one leaf
