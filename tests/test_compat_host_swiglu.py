"""mindspeed_ms.compat.host_swiglu: megatron's SwiGLU MLP (``--swiglu`` without the bias-SwiGLU fusion) with its
glu as one host Function computes what megatron computes under PyTorch.

One script builds megatron-core's own ``MLP`` (the local spec's column and row parallel layers, a gated linear unit
with ``F.silu``) from the same weights under MSAdapter (the adaptor applied) and under the PyTorch reference
interpreter, runs it forward and backward, and saves the output and the gradients of the input and of every
parameter: within float32 GEMM rounding and an ulp or two of SiLU's ``exp``. On our side the script counts the
Function's calls: the SwiGLU cases take it, a float64 block (megatron's chunk, SiLU and product), the bias-SwiGLU
fusion and a gated gelu do not, and the Function alone (no megatron around it) gives PyTorch's
``silu(a) * b`` and its autograd gradient of a float32 ``[32, 2, 344]`` input.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from _helpers import json_lines, run_python, run_reference, subprocess_env

SCRIPT = """
import os, sys
ours = os.environ.get("MINDSPEED_AI_FRAMEWORK") == "mindspore"
if ours:
    import mindspeed_ms.adaptor  # noqa: F401
import numpy as np
import torch
import torch.nn.functional as F
from megatron.core import parallel_state
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
from megatron.core.transformer.spec_utils import build_module
from megatron.core.transformer.transformer_config import TransformerConfig

parallel_state.set_tensor_model_parallel_world_size(1)
parallel_state.set_tensor_model_parallel_rank(0)
parallel_state.set_expert_model_parallel_rank(0)
if ours:
    model_parallel_cuda_manual_seed(1)
given = dict(np.load(sys.argv[1]))
results, calls = {}, {}
counted = [0]
if ours:
    from mindspeed_ms.compat import host_swiglu
    _swiglu = host_swiglu.swiglu

    def swiglu(x):
        counted[0] += 1
        return _swiglu(x)
    host_swiglu.swiglu = swiglu


def mlp_of(bias, activation=F.silu, fusion=False):
    config = TransformerConfig(num_layers=1, hidden_size=64, ffn_hidden_size=172, num_attention_heads=4,
                               add_bias_linear=bias, gated_linear_unit=True, activation_func=activation,
                               bias_activation_fusion=fusion, use_cpu_initialization=True)
    module = build_module(get_gpt_layer_local_spec().submodules.mlp, config=config)
    with torch.no_grad():
        for part, param in module.named_parameters():
            param.copy_(torch.tensor(given[part.replace(".", "_")]))
    return module


def case(label, bias=True, dtype=torch.float32, activation=F.silu, fusion=False):
    before = counted[0]
    module = mlp_of(bias, activation, fusion).to(dtype)
    leaf = torch.tensor(given["x"]).to(dtype).requires_grad_(True)
    output, output_bias = module(leaf * 1.0)
    output.backward(torch.tensor(given["g"]).to(dtype))
    results[label + ".out"] = output.detach().float().numpy()
    results[label + ".grad_x"] = leaf.grad.float().numpy()
    for part, param in module.named_parameters():
        if param.grad is not None:
            results[f"{label}.grad_{part.replace('.', '_')}"] = param.grad.float().numpy()
    calls[label] = counted[0] - before


case("bias")
case("no_bias", bias=False)
case("float64", dtype=torch.float64)
case("gated_gelu", activation=F.gelu)
try:
    case("bias_swiglu_fusion", fusion=True)  # megatron's fused path (its own Function): never ours
except Exception as error:  # (a jit fuser this interpreter lacks: the same on both sides, then)
    calls["bias_swiglu_fusion"] = type(error).__name__

# the glu alone, as megatron's closure computes it
leaf = torch.tensor(given["h"], requires_grad=True)
halves = torch.chunk(leaf, 2, dim=-1)
expected = F.silu(halves[0]) * halves[1]
if ours:
    mine = torch.tensor(given["h"], requires_grad=True)
    got = host_swiglu.swiglu(mine)
    got.backward(torch.tensor(given["gh"]))
    results["alone.out"] = got.detach().numpy()
    results["alone.grad"] = mine.grad.numpy()
else:
    expected.backward(torch.tensor(given["gh"]))
    results["alone.out"] = expected.detach().numpy()
    results["alone.grad"] = leaf.grad.numpy()

if len(sys.argv) > 2:
    np.savez(sys.argv[2], **results)
else:
    import json
    print(json.dumps({"calls": calls, **{k: v.tolist() for k, v in results.items()}}))
"""

_RNG = np.random.default_rng(24)
INPUTS = {"linear_fc1_weight": (_RNG.standard_normal((344, 64)) * 0.2).astype(np.float32),
          "linear_fc1_bias": (_RNG.standard_normal(344) * 0.2).astype(np.float32),
          "linear_fc2_weight": (_RNG.standard_normal((64, 172)) * 0.2).astype(np.float32),
          "linear_fc2_bias": (_RNG.standard_normal(64) * 0.2).astype(np.float32),
          "x": _RNG.standard_normal((32, 2, 64)).astype(np.float32),
          "g": _RNG.standard_normal((32, 2, 64)).astype(np.float32),
          "h": (_RNG.standard_normal((32, 2, 344)) * 4).astype(np.float32),
          "gh": _RNG.standard_normal((32, 2, 172)).astype(np.float32)}


def test_swiglu_mlp_matches_megatron_on_pytorch(tmp_path: Path) -> None:
    np.savez(tmp_path / "inputs.npz", **INPUTS)
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    ours = json_lines(run_python(sys.executable, "-c", SCRIPT, str(tmp_path / "inputs.npz"), env=env))[-1]
    calls = ours.pop("calls")
    assert calls["bias"] == 1
    assert calls["no_bias"] == 1
    assert calls["float64"] == 0
    assert calls["gated_gelu"] == 0
    assert calls["bias_swiglu_fusion"] in (0, "RuntimeError", "AssertionError"), calls
    reference = run_reference(SCRIPT, INPUTS, tmp_path)
    assert set(reference) == set(ours)
    assert {"bias.grad_linear_fc1_bias", "bias.grad_linear_fc1_weight", "no_bias.grad_x"} <= set(reference)
    for key, expected in reference.items():
        got = np.asarray(ours[key], np.float32)
        assert got.shape == expected.shape, key
        if key == "alone.out":  # the product PyTorch's bits, SiLU's exp NumPy's: an ulp or two
            np.testing.assert_allclose(got, expected, rtol=3e-7, atol=1e-37, err_msg=key)
        elif key == "alone.grad":  # SiLU's backward 1 + x * (1 - s) cancels where x < 0: an ulp of exp grows
            assert np.abs(got - expected).max() <= 8 * np.spacing(np.abs(expected).max()), key
        else:  # GEMMs in another summation order
            scale = max(1.0, float(np.abs(expected).max()))
            np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-6 * scale, err_msg=key)
