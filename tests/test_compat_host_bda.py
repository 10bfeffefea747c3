"""mindspeed_ms.compat.host_bda: megatron's bias-dropout-add with dropout off as one host Function, against real
PyTorch and against megatron's own function on MindSpore.

One script calls megatron-core's ``get_bias_dropout_add`` entries (fused and unfused, training and evaluation) under
MSAdapter (the adaptor applied) and under the PyTorch reference interpreter on the same tensors and saves the output
and the gradients of x, the residual and the bias: they must agree to float32 rounding. Under MSAdapter the same
calls run megatron's unwrapped function too: the Function must give its bits, except the bias gradient below
:data:`~mindspeed_ms.compat.bias_add.MIN_ELEMENTS` elements (there the float64 sum rounded once, where MindSpore's
BiasAddGrad summed in float32). The decisions (what stays megatron's) are asked of
:func:`~mindspeed_ms.compat.host_bda.plain`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from _helpers import json_lines, run_python, run_reference, subprocess_env

from mindspeed_ms.compat import host_bda
from mindspeed_ms.compat.bias_add import MIN_ELEMENTS

SCRIPT = """
import os, sys
if os.environ.get("MINDSPEED_AI_FRAMEWORK") == "mindspore":
    import mindspeed_ms.adaptor  # noqa: F401
import numpy as np
import torch
import megatron.core.fusions.fused_bias_dropout as fused_bias_dropout

ours = os.environ.get("MINDSPEED_AI_FRAMEWORK") == "mindspore"
given = dict(np.load(sys.argv[1]))
results, taken = {}, {}
if ours:
    from mindspeed_ms.compat import host_bda
    if os.environ.get("BDA_PYTHON_BODIES") == "1":
        host_bda._compiled = None  # before the Function is first built: its Python bodies
    decide = host_bda.plain
    Function = host_bda.function()  # the Function the wrapper applies (it looks apply up at its first call)
    applied = Function.apply

    def counted(*args):  # the wrapper's applies (host_add's ``residual + out`` inside megatron's function: not)
        if not sys._getframe(1).f_code.co_filename.endswith("host_add.py"):
            taken[name] = taken.get(name, 0) + 1
        return applied(*args)
    Function.apply = counted
    megatrons = fused_bias_dropout._bias_dropout_add_func.__wrapped__


def case(label, size, bias=True, fused=True, training=True, prob=0.0, x_grad=True, megatron=False):
    global name
    name = label
    leaves = {"x": torch.tensor(given["x_" + size], requires_grad=x_grad),
              "residual": torch.tensor(given["r_" + size], requires_grad=True)}
    if bias:
        leaves["bias"] = torch.tensor(given["b_" + size], requires_grad=True)
    x = leaves["x"] * 1.0 if x_grad else leaves["x"]
    residual = leaves["residual"] * 1.0
    pair = (x, leaves.get("bias"))
    if megatron:
        out = megatrons(pair, residual, prob, training)
    else:
        out = fused_bias_dropout.get_bias_dropout_add(training, fused)(pair, residual, prob)
    results[label + ".out"] = out.detach().numpy()
    out.backward(torch.tensor(given["g_" + size]))
    for part, leaf in leaves.items():
        if leaf.grad is not None:
            results[f"{label}.grad_{part}"] = leaf.grad.numpy()


CASES = {"tiny": dict(size="tiny"), "wide": dict(size="wide"), "unfused_no_bias": dict(size="tiny", bias=False,
         fused=False), "evaluation": dict(size="tiny", training=False, prob=0.3), "frozen_x": dict(size="wide",
         x_grad=False)}
for label, options in CASES.items():
    case(label, **options)
    if ours:
        case(label + "_megatron", megatron=True, **options)

# dropout on: megatron's function (its random stream); the shape only
name = "dropout"
x = torch.tensor(given["x_tiny"], requires_grad=True) * 1.0
out = fused_bias_dropout.get_bias_dropout_add(True, True)((x, None), torch.tensor(given["r_tiny"]), 0.5)
dropout_shape = list(out.shape)

decisions = {}
if ours:
    x, r, b = (torch.tensor(given[key]) for key in ("x_tiny", "r_tiny", "b_tiny"))
    decisions["plain"] = decide(x, b, r, 0.0, True)
    decisions["no_bias"] = decide(x, None, r, 0.0, True)
    decisions["evaluation"] = decide(x, b, r, 0.5, False)
    decisions["dropout"] = decide(x, b, r, 0.1, True)
    decisions["float64"] = decide(x.double(), b.double(), r.double(), 0.0, True)
    decisions["bfloat16_residual"] = decide(x, b, r.bfloat16(), 0.0, True)
    decisions["strided_x"] = decide(x.transpose(0, 1).contiguous().transpose(0, 1), b, r, 0.0, True)
    decisions["other_shapes"] = decide(x, b, r[:16], 0.0, True)
    decisions["bias_2d"] = decide(x, b.reshape(1, -1), r, 0.0, True)
    decisions["bias_size"] = decide(x, b[:32], r, 0.0, True)
    decisions["empty"] = decide(x[:0], b, r[:0], 0.0, True)
    decisions["numbers"] = decide(1.0, b, r, 0.0, True)

if len(sys.argv) > 2:
    np.savez(sys.argv[2], **results)
else:
    import json
    listed = {k: v.tolist() for k, v in results.items()}
    compiled = host_bda.has_compiled_bodies() if ours else None
    print(json.dumps({"taken": taken, "decisions": decisions, "dropout_shape": dropout_shape, "compiled": compiled,
                      **listed}))
"""

_RNG = np.random.default_rng(17)
INPUTS = {f"{kind}_{size}": _RNG.standard_normal(shape).astype(np.float32)
          for size, shape in (("tiny", (32, 4, 64)), ("wide", (64, 4, 256))) for kind in "xrg"}
INPUTS.update(b_tiny=_RNG.standard_normal(64).astype(np.float32), b_wide=_RNG.standard_normal(256).astype(np.float32))
CASES = ("tiny", "wide", "unfused_no_bias", "evaluation", "frozen_x")


def _run_ours(folder: Path, **extra: str) -> dict:
    np.savez(folder / "inputs.npz", **INPUTS)
    # on by default (patches/msadapter_cpu_kernels.HOST_BLOCKS; =0: megatron's own path, tests/test_compat_host_mlp.py)
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore", **extra)
    return json_lines(run_python(sys.executable, "-c", SCRIPT, str(folder / "inputs.npz"), env=env))[-1]


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The script's results with the Function's bodies as built here (C where ``_host_bodies`` is)."""
    return _run_ours(tmp_path_factory.mktemp("host_bda"))


def test_the_c_bodies_give_the_python_bodies_bits(ours: dict, tmp_path: Path) -> None:
    """``_host_bodies.BiasDropoutAdd``'s forward and backward (where built) make the Python bodies' calls: every
    output and gradient of every case, megatron's too, bit for bit, and the same decisions."""
    python = _run_ours(tmp_path, BDA_PYTHON_BODIES="1")
    assert ours["compiled"] is host_bda.has_compiled_bodies()
    assert python["compiled"] is False
    keys = [key for key in ours if "." in key]
    assert len(keys) >= 4 * len(CASES), keys
    assert sorted(keys) == sorted(key for key in python if "." in key)
    for key in keys:
        assert np.array_equal(np.asarray(ours[key], np.float32), np.asarray(python[key], np.float32)), key
    assert ours["taken"] == python["taken"]
    assert ours["decisions"] == python["decisions"]


def test_the_shapes_straddle_the_host_bias_add() -> None:
    assert 32 * 4 * 64 < MIN_ELEMENTS <= 64 * 4 * 256


def test_dropout_off_is_our_function_and_dropout_on_megatrons(ours: dict) -> None:
    taken = ours["taken"]
    for case in CASES:
        assert taken[case] == 1, taken
        assert case + "_megatron" not in taken, taken  # megatron's unwrapped function: never asked
    assert "dropout" not in taken, taken
    assert ours["dropout_shape"] == [32, 4, 64]


def test_outputs_and_gradients_agree_with_megatron_on_pytorch(ours: dict, tmp_path: Path) -> None:
    reference = run_reference(SCRIPT, INPUTS, tmp_path)
    assert set(reference) == {key for key in ours if "." in key and not key.split(".")[0].endswith("_megatron")}
    assert "frozen_x.grad_x" not in reference
    assert "unfused_no_bias.grad_bias" not in reference
    assert {"tiny.grad_x", "tiny.grad_residual", "tiny.grad_bias", "wide.grad_bias"} <= set(reference)
    for key, expected in reference.items():
        got = np.asarray(ours[key], dtype=expected.dtype)
        assert got.shape == expected.shape, key
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=key)


def test_the_function_gives_the_bits_of_megatrons_function(ours: dict) -> None:
    compared = 0
    for key in (key for key in ours if "." in key and key.split(".")[0] in CASES):
        case, _, what = key.partition(".")
        fused = np.asarray(ours[key], np.float32)
        unfused = np.asarray(ours[f"{case}_megatron.{what}"], np.float32)
        if what == "grad_bias" and case in ("tiny", "evaluation"):  # MindSpore's BiasAddGrad below MIN_ELEMENTS
            np.testing.assert_allclose(fused, unfused, rtol=1e-5, atol=1e-5, err_msg=key)
        else:
            np.testing.assert_array_equal(fused, unfused, err_msg=key)
        compared += 1
    assert compared == 18


def test_what_megatrons_function_keeps(ours: dict) -> None:
    decisions = ours["decisions"]
    for taken in ("plain", "no_bias", "evaluation"):
        assert decisions.pop(taken) is True, taken
    assert decisions == dict.fromkeys(decisions, False)
    assert len(decisions) == 9
