"""mindspeed_ms.compat.tp_one_mappings: megatron's region mappings at tensor-parallel size 1, against real PyTorch.

The same script runs megatron-core's mapping functions under MSAdapter (the adaptor applied) and under the PyTorch
reference interpreter: values and gradients through each mapping must agree; under MSAdapter the mapping hands back
its input at size 1 and applies megatron's Function at size 2.
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
from megatron.core import parallel_state
from megatron.core.tensor_parallel import layers, mappings

inputs = dict(np.load(sys.argv[1]))
parallel_state.set_tensor_model_parallel_world_size(1)
parallel_state.set_tensor_model_parallel_rank(0)
results, same = {}, {}
for name in ("copy_to_tensor_model_parallel_region", "reduce_from_tensor_model_parallel_region",
             "scatter_to_tensor_model_parallel_region", "gather_from_tensor_model_parallel_region"):
    for module in (mappings, layers):
        mapping = getattr(module, name, None)
        if mapping is None:
            continue
        leaf = torch.tensor(inputs["x"], requires_grad=True)
        hidden = leaf * 2.0
        out = mapping(hidden)
        loss = (out * torch.tensor(inputs["w"])).sum()
        loss.backward()
        key = f"{module.__name__.rsplit('.', 1)[-1]}.{name}"
        results[f"{key}.value"] = out.detach().numpy()
        results[f"{key}.grad"] = leaf.grad.numpy()
        same[key] = out is hidden
parallel_state.set_tensor_model_parallel_world_size(2)
hidden = torch.tensor(inputs["x"], requires_grad=True) * 1.0
same["size_two"] = mappings.copy_to_tensor_model_parallel_region(hidden) is hidden
if len(sys.argv) > 2:
    np.savez(sys.argv[2], **results)
else:
    import json
    print(json.dumps({"same": same, **{key: value.tolist() for key, value in results.items()}}))
"""

INPUTS = {"x": np.linspace(-1.5, 2.0, 12, dtype=np.float32).reshape(3, 4),
          "w": np.linspace(0.25, 3.0, 12, dtype=np.float32).reshape(3, 4)}


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("tp_one")
    np.savez(folder / "inputs.npz", **INPUTS)
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    return json_lines(run_python(sys.executable, "-c", SCRIPT, str(folder / "inputs.npz"), env=env))[-1]


def test_each_mapping_hands_back_its_input_at_tensor_parallel_size_one(ours: dict) -> None:
    mapped = {key: value for key, value in ours["same"].items() if key != "size_two"}
    assert len(mapped) == 8  # four mappings, each through mappings and through layers' own imported name
    assert all(mapped.values()), mapped


def test_at_size_two_megatrons_function_is_applied(ours: dict) -> None:
    assert ours["same"]["size_two"] is False  # the Function's output: a new tensor object


def test_values_and_gradients_agree_with_pytorch(ours: dict, tmp_path: Path) -> None:
    reference = run_reference(SCRIPT, INPUTS, tmp_path)
    assert len(reference) == 16
    for key, expected in reference.items():
        np.testing.assert_array_equal(np.asarray(ours[key], dtype=np.float32), expected, err_msg=key)


def test_the_patches_are_wraps_that_revert_to_megatrons_functions() -> None:
    script = """
import os
os.environ["MINDSPEED_AI_FRAMEWORK"] = "mindspore"
import json
from mindspeed_ms.adaptor import MindSporeAdaptation
import megatron.core.tensor_parallel.layers as layers
import megatron.core.tensor_parallel.mappings as mappings
names = sorted(status.target.rsplit(".", 1)[-1] for status in MindSporeAdaptation.status()
               if status.target.endswith("_tensor_model_parallel_region") and status.state == "applied")
applied = [getattr(mappings, name).__code__.co_filename for name in names]
MindSporeAdaptation.revert()
print(json.dumps({"names": names, "applied": applied,
                  "reverted": [getattr(module, name).__code__.co_filename for module in (mappings, layers)
                               for name in names if hasattr(module, name)]}))
"""
    result = json_lines(run_python(sys.executable, "-c", script, env=subprocess_env(drop=("MINDSPEED_MS_",))))[-1]
    assert result["names"] == sorted(("copy_to_tensor_model_parallel_region",
                                      "reduce_from_tensor_model_parallel_region",
                                      "scatter_to_tensor_model_parallel_region",
                                      "gather_from_tensor_model_parallel_region"))
    assert all(path.endswith("tp_one_mappings.py") for path in result["applied"])
    assert len(result["reverted"]) == 8
    assert all(path.endswith("megatron/core/tensor_parallel/mappings.py") for path in result["reverted"]), result
