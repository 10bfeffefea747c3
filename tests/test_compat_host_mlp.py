"""mindspeed_ms.compat.host_mlp: megatron's MLP block as one host Function, against real PyTorch and against the
four Functions it replaces.

One script builds megatron-core's own ``MLP`` (the local spec's: ``ColumnParallelLinear``, gelu,
``RowParallelLinear``) from the same weights under MSAdapter (the adaptor applied) and under the PyTorch reference
interpreter, runs it forward and backward, and saves the output and the gradients of the input and of every
parameter: they must agree to float32 GEMM rounding. Under MSAdapter the same module runs again with a forward hook
on ``linear_fc1`` (megatron's own forward then: the hook expects the layer to be called): the fused Function must
give the same bits as that path except fc1's bias gradient below :data:`~mindspeed_ms.compat.bias_add.MIN_ELEMENTS`
elements (there the float64 sum rounded once, where MindSpore's BiasAddGrad summed in float32). The decisions
(what stays megatron's) are asked of :func:`~mindspeed_ms.compat.host_mlp.plan` on real modules and configs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from _helpers import json_lines, run_python, run_reference, subprocess_env

from mindspeed_ms.compat import host_mlp
from mindspeed_ms.compat.bias_add import MIN_ELEMENTS
from mindspeed_ms.compat.gelu import host_gelu

#: the fused path needs _host_gelu's kernels (built, and AVX2 here); without them megatron's forward runs
HOST = host_gelu() is not None

SCRIPT = """
import os, sys
if os.environ.get("MINDSPEED_AI_FRAMEWORK") == "mindspore":
    import mindspeed_ms.adaptor  # noqa: F401
import numpy as np
import torch
from megatron.core import parallel_state
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
from megatron.core.transformer.spec_utils import build_module
from megatron.core.transformer.transformer_config import TransformerConfig

ours = os.environ.get("MINDSPEED_AI_FRAMEWORK") == "mindspore"
parallel_state.set_tensor_model_parallel_world_size(1)
parallel_state.set_tensor_model_parallel_rank(0)
parallel_state.set_expert_model_parallel_rank(0)
if ours:  # (the reference builds its weights on the CPU without the tracker)
    model_parallel_cuda_manual_seed(1)
given = dict(np.load(sys.argv[1]))
results, taken = {}, {}
if ours:
    from mindspeed_ms.compat import host_mlp
    if os.environ.get("MLP_PYTHON_BODIES") == "1":
        host_mlp._compiled = None  # before the Function is first built: its Python bodies
    planned = host_mlp.plan

    def counted(mlp, hidden):
        found = planned(mlp, hidden)
        taken[name] = taken.get(name, 0) + (found is not None)
        return found
    host_mlp.plan = counted


def mlp_of(bias=True, **options):
    options = {"bias_activation_fusion": False, **options}
    config = TransformerConfig(num_layers=1, hidden_size=64, ffn_hidden_size=256, num_attention_heads=4,
                               add_bias_linear=bias, use_cpu_initialization=True, **options)
    module = build_module(get_gpt_layer_local_spec().submodules.mlp, config=config)
    with torch.no_grad():
        for part, param in module.named_parameters():
            value = given[part.replace(".", "_")]
            if tuple(param.shape) == value.shape:  # (a gated unit's fc1 is twice as wide: its own values)
                param.copy_(torch.tensor(value))
    return module


def case(label, x, bias=True, x_grad=True, hook=False):
    global name
    name = label
    module = mlp_of(bias)
    if hook:  # megatron's own forward: the hook expects fc1 to be called
        module.linear_fc1.register_forward_hook(lambda *args: None)
    leaf = torch.tensor(given[x], requires_grad=x_grad)
    output, output_bias = module(leaf * 1.0 if x_grad else leaf)
    results[label + ".out"] = output.detach().numpy()
    results[label + ".bias_returned"] = np.array(output_bias is module.linear_fc2.bias)
    output.backward(torch.tensor(given["g" + x[1:]]))
    if x_grad:
        results[label + ".grad_x"] = leaf.grad.numpy()
    for part, param in module.named_parameters():
        if param.grad is not None:  # fc2's bias: returned to the caller, not used here
            results[f"{label}.grad_{part.replace('.', '_')}"] = param.grad.numpy()


def stacked(suffix, hook):
    # two blocks in a row, two steps: the second block's backward first, the arrays of finished ones reused
    global name
    name = "stacked"
    blocks = (mlp_of(), mlp_of())
    if hook:
        for module in blocks:
            module.linear_fc1.register_forward_hook(lambda *args: None)
    for step in (0, 1):
        leaf = torch.tensor(given["x_tiny"] * (step + 1), requires_grad=True)
        hidden = leaf * 1.0
        for module in blocks:
            hidden, _ = module(hidden)
        label = f"stacked{step}{suffix}"
        results[label + ".out"] = hidden.detach().numpy()
        hidden.backward(torch.tensor(given["g_tiny"]))
        results[label + ".grad_x"] = leaf.grad.numpy()
        for index, module in enumerate(blocks):  # accumulated over the steps
            for part, param in module.named_parameters():
                if param.grad is not None:
                    results[f"{label}.grad{index}_{part.replace('.', '_')}"] = param.grad.numpy().copy()


for hook in ((False, True) if ours else (False,)):
    suffix = "_megatron" if hook else ""
    case("tiny" + suffix, "x_tiny", hook=hook)
    case("wide" + suffix, "x_wide", hook=hook)
    case("no_bias" + suffix, "x_tiny", bias=False, hook=hook)
    case("frozen_input" + suffix, "x_tiny", x_grad=False, hook=hook)
    stacked(suffix, hook)

# the input written in place after the forward: the backward refuses (PyTorch: RuntimeError)
name = "written"
hidden = torch.tensor(given["x_tiny"], requires_grad=True) * 1.0
output, _ = mlp_of()(hidden)
hidden.add_(1.0)
try:
    output.sum().backward()
    refused = ""
except RuntimeError as error:
    refused = str(error)

decisions = {}
if ours:
    import megatron.core.tensor_parallel.layers as layers
    import torch.nn.functional as F
    from mindspeed_ms.compat import gelu, host_linear
    from mindspeed_ms.compat.module_recording import set_recording_module_outputs
    x = torch.tensor(given["x_tiny"])

    def decide(module, hidden=x):
        return planned(module, hidden) is not None

    decisions["plain"] = decide(mlp_of())
    decisions["bias_activation_fusion"] = decide(mlp_of(bias_activation_fusion=True))
    decisions["gated_linear_unit"] = decide(mlp_of(gated_linear_unit=True))
    module = mlp_of()
    module.activation_func = F.silu
    decisions["silu"] = decide(module)
    module.activation_func = F.gelu.__wrapped__
    decisions["msadapter_gelu"] = decide(module)
    decisions["float64_input"] = decide(mlp_of(), x.double())
    decisions["strided_input"] = decide(mlp_of(), torch.tensor(given["x_wide"]).transpose(0, 1))
    module = mlp_of()
    module.linear_fc2.weight.requires_grad_(False)
    decisions["frozen_fc2"] = decide(module)
    module = mlp_of()
    module.linear_fc2.skip_bias_add = False
    decisions["fc2_bias_added"] = decide(module)
    module = mlp_of()
    module.linear_fc1.gather_output = True
    decisions["gathered"] = decide(module)
    module = mlp_of()
    module.linear_fc2.register_forward_pre_hook(lambda *args: None)
    decisions["fc2_pre_hook"] = decide(module)
    set_recording_module_outputs(True)
    decisions["recording"] = decide(mlp_of())
    set_recording_module_outputs(False)
    parallel_state.set_tensor_model_parallel_world_size(2)
    decisions["tp2"] = decide(mlp_of())
    parallel_state.set_tensor_model_parallel_world_size(1)
    wrapper = layers.linear_with_grad_accumulation_and_async_allreduce
    layers.linear_with_grad_accumulation_and_async_allreduce = wrapper.__wrapped__
    decisions["megatrons_linear_function"] = decide(mlp_of())
    layers.linear_with_grad_accumulation_and_async_allreduce = wrapper
    decisions["plain_again"] = decide(mlp_of())
    decisions["is_linear_wrapper"] = host_linear.is_linear_wrapper(wrapper)
    decisions["is_erf_gelu"] = gelu.is_erf_gelu(F.gelu)
    decisions["host_gelu"] = gelu.host_gelu() is not None

if len(sys.argv) > 2:
    np.savez(sys.argv[2], **results)
else:
    import json
    listed = {k: v.tolist() for k, v in results.items()}
    compiled = host_mlp.has_compiled_bodies() if ours else None
    print(json.dumps({"taken": taken, "refused": refused, "decisions": decisions, "compiled": compiled, **listed}))
"""

_RNG = np.random.default_rng(11)
INPUTS = {"linear_fc1_weight": (_RNG.standard_normal((256, 64)) * 0.2).astype(np.float32),
          "linear_fc1_bias": (_RNG.standard_normal(256) * 0.2).astype(np.float32),
          "linear_fc2_weight": (_RNG.standard_normal((64, 256)) * 0.2).astype(np.float32),
          "linear_fc2_bias": (_RNG.standard_normal(64) * 0.2).astype(np.float32),
          # [32, 4, 256] activations: below MIN_ELEMENTS (MindSpore's BiasAdd); [64, 4, 256]: the host bias add
          "x_tiny": _RNG.standard_normal((32, 4, 64)).astype(np.float32),
          "g_tiny": _RNG.standard_normal((32, 4, 64)).astype(np.float32),
          "x_wide": _RNG.standard_normal((64, 4, 64)).astype(np.float32),
          "g_wide": _RNG.standard_normal((64, 4, 64)).astype(np.float32)}
CASES = ("tiny", "wide", "no_bias", "frozen_input", "stacked0", "stacked1")


def _run_ours(folder: Path, **extra: str) -> dict:
    np.savez(folder / "inputs.npz", **INPUTS)
    # on by default (patches/msadapter_cpu_kernels.HOST_BLOCKS; =0: megatron's own path, tested below)
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore", **extra)
    return json_lines(run_python(sys.executable, "-c", SCRIPT, str(folder / "inputs.npz"), env=env))[-1]


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The script's results with the Function's bodies as built here (C where ``_host_bodies`` is)."""
    return _run_ours(tmp_path_factory.mktemp("host_mlp"))


def test_the_c_bodies_give_the_python_bodies_bits(ours: dict, tmp_path: Path) -> None:
    """``_host_bodies.MLP``'s forward and backward (where built) make the Python bodies' calls: every output and
    gradient of every case bit for bit, the same decisions, and the same refusal of an input written in place."""
    python = _run_ours(tmp_path, MLP_PYTHON_BODIES="1")
    assert ours["compiled"] is host_mlp.has_compiled_bodies()
    assert python["compiled"] is False
    keys = [key for key in ours if "." in key]
    assert len(keys) >= 38, keys
    assert sorted(keys) == sorted(key for key in python if "." in key)
    for key in keys:
        assert np.array_equal(np.asarray(ours[key], np.float32), np.asarray(python[key], np.float32)), key
    assert ours["taken"] == python["taken"]
    assert ours["decisions"] == python["decisions"]
    assert ours["refused"] == python["refused"]
    assert "modified by an inplace operation" in python["refused"]


def test_the_shapes_straddle_the_host_bias_add() -> None:
    assert 32 * 4 * 256 < MIN_ELEMENTS <= 64 * 4 * 256


def test_the_plain_mlp_is_our_function_and_a_hooked_one_megatrons(ours: dict) -> None:
    taken = ours["taken"]
    for case in CASES[:4]:
        assert taken[case] == int(HOST), taken
        assert taken[case + "_megatron"] == 0, taken
        assert ours[case + ".bias_returned"] is True
    assert taken["stacked"] == 4 * int(HOST), taken  # two blocks, two steps (the hooked blocks: megatron's)


def test_outputs_and_gradients_agree_with_megatron_on_pytorch(ours: dict, tmp_path: Path) -> None:
    reference = run_reference(SCRIPT, INPUTS, tmp_path)
    assert set(reference) == {key for key in ours if "." in key and not key.split(".")[0].endswith("_megatron")}
    assert "frozen_input.grad_x" not in reference
    assert {"tiny.grad_x", "tiny.grad_linear_fc1_weight", "tiny.grad_linear_fc1_bias", "tiny.grad_linear_fc2_weight",
            "no_bias.grad_linear_fc2_weight"} <= set(reference)
    assert "no_bias.grad_linear_fc1_bias" not in reference
    assert "tiny.grad_linear_fc2_bias" not in reference
    for key, expected in reference.items():
        got = np.asarray(ours[key], dtype=expected.dtype)
        assert got.shape == expected.shape, key
        scale = max(1.0, float(np.abs(expected).max()))  # float32 GEMM rounding grows with the values (stacked)
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5 * scale, err_msg=key)


def test_the_function_gives_the_bits_of_megatrons_four_nodes(ours: dict) -> None:
    compared = 0
    for key in (key for key in ours if "." in key and key.split(".")[0] in CASES):
        case, _, what = key.partition(".")
        fused = np.asarray(ours[key], np.float32)
        unfused = np.asarray(ours[f"{case}_megatron.{what}"], np.float32)
        if what.endswith("linear_fc1_bias") and case != "wide":  # MindSpore's BiasAddGrad below MIN_ELEMENTS
            np.testing.assert_allclose(fused, unfused, rtol=1e-5, atol=1e-5, err_msg=key)
        else:
            np.testing.assert_array_equal(fused, unfused, err_msg=key)
        compared += 1
    assert compared >= 38


def test_an_input_written_after_the_forward_is_refused_as_pytorch_refuses_it(ours: dict) -> None:
    assert ours["taken"]["written"] == int(HOST)
    assert "modified by an inplace operation" in ours["refused"]


def test_what_megatrons_forward_keeps(ours: dict) -> None:
    decisions = ours["decisions"]
    assert decisions.pop("plain") is HOST
    assert decisions.pop("plain_again") is HOST
    assert decisions.pop("is_linear_wrapper") is True
    assert decisions.pop("is_erf_gelu") is True
    assert decisions.pop("host_gelu") is HOST
    # every other configuration computes something else, or someone expects the modules to be called
    assert decisions == dict.fromkeys(decisions, False)
    assert len(decisions) == 13


OFF_SCRIPT = """
import mindspeed_ms.adaptor  # noqa: F401
import json
import torch
import megatron.core.fusions.fused_bias_dropout as fused_bias_dropout
from megatron.core.transformer.mlp import MLP
print(json.dumps({"bda": hasattr(fused_bias_dropout._bias_dropout_add_func, "__wrapped__"),
                  "mlp": hasattr(MLP.forward, "__wrapped__"),
                  "add": torch.Tensor.__add__.__code__.co_filename.endswith("compat/host_add.py")}))
"""


@pytest.mark.parametrize("setting", [None, "", "1", "0", "off"])
def test_the_host_blocks_are_installed_unless_turned_off(setting: str | None) -> None:
    extra = {} if setting is None else {"MINDSPEED_MS_HOST_BLOCKS": setting}
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore", **extra)
    wrapped = json_lines(run_python(sys.executable, "-c", OFF_SCRIPT, env=env))[-1]
    on = setting not in ("0", "off")
    assert wrapped == {"bda": on, "mlp": on, "add": on}


def test_an_unknown_host_blocks_setting_is_refused_and_nothing_is_applied() -> None:
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore", MINDSPEED_MS_HOST_BLOCKS="maybe")
    script = ("from mindspore.common.tensor import Tensor\nbefore = Tensor.__add__\n"
              "try:\n    import mindspeed_ms.adaptor  # noqa: F401\n"
              "except Exception as error:\n    print(type(error).__name__, '|', error)\n"
              "print('unchanged', Tensor.__add__ is before)\n")
    output = run_python(sys.executable, "-c", script, env=env)
    assert "ProviderError | provider 'msadapter_cpu_kernels'" in output, output
    assert "MINDSPEED_MS_HOST_BLOCKS" in output, output
    assert "'maybe'" in output, output
    assert "unchanged True" in output, output
