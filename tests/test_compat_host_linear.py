"""mindspeed_ms.compat.host_linear: megatron's linear layer Function on the host, against real PyTorch.

The same script calls megatron-core's ``linear_with_grad_accumulation_and_async_allreduce`` as its column and row
parallel layers do (keywords) under MSAdapter (the adaptor applied) and under the PyTorch reference interpreter:
outputs and the gradients of input, weight and bias must agree to float32 GEMM rounding. Under MSAdapter the plain
case is our Function, the other cases megatron's, and an input written in place after the forward is refused in
the backward as PyTorch refuses it.
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
bodies = os.environ.get("HOST_LINEAR_BODIES")
if bodies:  # under MSAdapter: the Function's bodies and the wrapper ("python": the Python ones even where C is built)
    from mindspeed_ms.compat import host_extensions, host_linear
    if bodies == "python":  # before megatron's layers are imported (the wrapper is made then)
        host_linear._compiled = None
        host_extensions._wrappers = None
import numpy as np
import torch
from megatron.core.tensor_parallel import layers

given = dict(np.load(sys.argv[1]))
results, kinds = {}, {}


def linear(x, w, b, **options):
    keywords = dict(gradient_accumulation_fusion=False, allreduce_dgrad=False, sequence_parallel=False,
                    grad_output_buffer=None)
    keywords.update(options)
    return layers.linear_with_grad_accumulation_and_async_allreduce(input=x, weight=w, bias=b, **keywords)


def case(name, x, w, b=None, x_grad=True, w_grad=True):
    leaf_x = torch.tensor(given[x], requires_grad=x_grad)
    leaf_w = torch.tensor(given[w], requires_grad=w_grad)
    leaf_b = None if b is None else torch.tensor(given[b], requires_grad=True)
    hidden = leaf_x * 1.0 if x_grad else leaf_x  # an activation, as in a layer
    out = linear(hidden, leaf_w, leaf_b)
    kinds[name] = type(out.grad_fn).__name__ if not hasattr(out.grad_fn, "name") else str(out.grad_fn)
    (out * torch.tensor(given["g" + x[1:]][..., : out.shape[-1]])).sum().backward()
    results[name + ".out"] = out.detach().numpy()
    for label, leaf in (("x", leaf_x), ("w", leaf_w), ("b", leaf_b)):
        if leaf is not None and leaf.grad is not None:
            results[f"{name}.grad_{label}"] = leaf.grad.numpy()


case("bias_3d", "x3", "w", "b")
case("no_bias_2d", "x2", "w")
case("frozen_input", "x3", "w", "b", x_grad=False)
case("frozen_weight", "x2", "w", None, w_grad=False)

# a fallback: megatron's Function itself (a deferral buffer; forward only)
x = torch.tensor(given["x3"], requires_grad=True) * 1.0
deferred = linear(x, torch.tensor(given["w"], requires_grad=True), None, grad_output_buffer=[])
kinds["buffer"] = str(deferred.grad_fn)
results["buffer.out"] = deferred.detach().numpy()

# an input written in place after the forward: the backward refuses (PyTorch: RuntimeError)
x = torch.tensor(given["x2"], requires_grad=True) * 1.0
out = linear(x, torch.tensor(given["w"], requires_grad=True), None)
x.add_(1.0)
try:
    out.sum().backward()
    refused = ""
except RuntimeError as error:
    refused = str(error)

if len(sys.argv) > 2:
    np.savez(sys.argv[2], **results)
else:
    import json
    compiled = bodies is not None and host_linear.has_compiled_bodies()
    kinds["wrapper"] = type(layers.linear_with_grad_accumulation_and_async_allreduce).__name__
    listed = {k: v.tolist() for k, v in results.items()}
    print(json.dumps({"kinds": kinds, "refused": refused, "compiled": compiled, **listed}))
"""

_RNG = np.random.default_rng(7)
INPUTS = {"x3": _RNG.standard_normal((5, 3, 24)).astype(np.float32),
          "x2": _RNG.standard_normal((7, 24)).astype(np.float32),
          "w": _RNG.standard_normal((40, 24)).astype(np.float32),
          "b": _RNG.standard_normal(40).astype(np.float32),
          "g3": _RNG.standard_normal((5, 3, 40)).astype(np.float32),
          "g2": _RNG.standard_normal((7, 40)).astype(np.float32)}


def _run_ours(folder: Path, bodies: str) -> dict:
    np.savez(folder / "inputs.npz", **INPUTS)
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore", HOST_LINEAR_BODIES=bodies)
    return json_lines(run_python(sys.executable, "-c", SCRIPT, str(folder / "inputs.npz"), env=env))[-1]


@pytest.fixture(scope="module", params=["default", "python"])
def ours(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Our run with the bodies the install runs (the C ones where built) and with the Python bodies."""
    return {"bodies": request.param, **_run_ours(tmp_path_factory.mktemp("host_linear"), request.param)}


def test_the_c_bodies_run_where_built_and_give_the_python_bodies_bits(tmp_path: Path) -> None:
    from mindspeed_ms.compat import host_linear

    default = _run_ours(tmp_path, "default")
    python = _run_ours(tmp_path, "python")
    assert default["compiled"] is host_linear.has_compiled_bodies()
    assert python["compiled"] is False
    assert default["kinds"]["wrapper"] == ("Linear" if host_linear.has_compiled_wrapper() else "function")
    assert python["kinds"]["wrapper"] == "function"
    assert {key for key in default if "." in key} == {key for key in python if "." in key}
    for key in (key for key in default if "." in key):
        np.testing.assert_array_equal(np.asarray(default[key], np.float32), np.asarray(python[key], np.float32),
                                      err_msg=key)
    assert default["refused"] == python["refused"]


def test_the_plain_case_is_our_function_and_the_rest_megatrons(ours: dict) -> None:
    kinds = ours["kinds"]
    for name in ("bias_3d", "no_bias_2d", "frozen_input", "frozen_weight"):
        assert "HostLinear" in kinds[name], kinds
    assert "HostLinear" not in kinds["buffer"], kinds
    assert "LinearWithGradAccumulation" in kinds["buffer"], kinds


def test_outputs_and_gradients_agree_with_megatron_on_pytorch(ours: dict, tmp_path: Path) -> None:
    reference = run_reference(SCRIPT, INPUTS, tmp_path)
    assert set(reference) == {key for key in ours if "." in key}
    # the frozen ones got no gradient, the others all of theirs
    assert "frozen_input.grad_x" not in reference
    assert "frozen_weight.grad_w" not in reference
    assert {"bias_3d.grad_x", "bias_3d.grad_w", "bias_3d.grad_b", "no_bias_2d.grad_w"} <= set(reference)
    for key, expected in reference.items():
        got = np.asarray(ours[key], dtype=np.float32)
        assert got.shape == expected.shape, key
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=key)


def test_an_input_written_after_the_forward_is_refused_as_pytorch_refuses_it(ours: dict) -> None:
    assert "modified by an inplace operation" in ours["refused"]
