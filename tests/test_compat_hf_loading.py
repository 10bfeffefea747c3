"""HF weights on MindSpore: transformers' config dtype names, safetensors' ``pt`` framework, ``torch.empty(size=)``.

What MindSpeed-LLM's ``convert_ckpt.py`` (HF -> Megatron) needs of transformers 4.57.1 (its pin) and safetensors
on MSAdapter. The MindSpore side runs in a subprocess; the config method is a stand-in shaped exactly like
transformers 4.57.1's ``PretrainedConfig.dict_dtype_to_str`` (transformers is not in the test environment).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from _helpers import ROOT

from mindspeed_ms.compat import transformers_config


class _MindSporeDtype:
    """Prints as MindSpore's dtypes do (``str(mindspore.float32) == "Float32"``: no ``torch.`` prefix)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name


class PretrainedConfig:  # transformers 4.57.1 configuration_utils, the method verbatim in behaviour
    def dict_dtype_to_str(self, d: dict[str, Any]) -> None:
        if d.get("dtype") is not None:
            if isinstance(d["dtype"], dict):
                d["dtype"] = {k: str(v).split(".")[-1] for k, v in d["dtype"].items()}
            elif not isinstance(d["dtype"], (str, int)):
                d["dtype"] = str(d["dtype"]).split(".")[1]
        for value in d.values():
            if isinstance(value, dict):
                self.dict_dtype_to_str(value)


def test_the_original_fails_on_a_mindspore_dtype() -> None:
    with pytest.raises(IndexError):
        PretrainedConfig().dict_dtype_to_str({"dtype": _MindSporeDtype("Float32")})


def test_dtypes_get_pytorchs_names_nested_ones_too(monkeypatch: pytest.MonkeyPatch) -> None:
    wrapped = transformers_config.dict_dtype_to_str_wrapper(PretrainedConfig.dict_dtype_to_str)
    monkeypatch.setattr(PretrainedConfig, "dict_dtype_to_str", wrapped)  # the recursion goes through the patch
    d: dict[str, Any] = {"dtype": _MindSporeDtype("BFloat16"), "text_config": {"dtype": _MindSporeDtype("Float32")},
                         "vision": {"dtype": {"a": _MindSporeDtype("Float16"), "b": "int64"}}, "size": 3}
    PretrainedConfig().dict_dtype_to_str(d)
    assert d == {"dtype": "bfloat16", "text_config": {"dtype": "float32"},
                 "vision": {"dtype": {"a": "float16", "b": "int64"}}, "size": 3}
    assert transformers_config.dtype_name("torch.float16") == "float16"  # PyTorch's dtype: as before
    kept = {"dtype": "float32", "token": {"dtype": 7}}
    PretrainedConfig().dict_dtype_to_str(kept)
    assert kept == {"dtype": "float32", "token": {"dtype": 7}}


SAFETENSORS = """
import json, struct, sys
import numpy as np
from safetensors.numpy import save_file
import mindspeed_ms.adaptor
import torch
import safetensors.torch
from mindspeed_ms.compat.errors import UnsupportedOpOptionError

path, bf16_path = sys.argv[1], sys.argv[2]
weights = {"w": np.arange(12, dtype=np.float32).reshape(3, 4) / 7, "i": np.array([1, -2], dtype=np.int64)}
save_file(weights, path, metadata={"format": "pt"})
result = {}
loaded = safetensors.torch.load_file(path)  # safe_open(framework="pt") inside
dtypes = {"w": torch.float32, "i": torch.int64}
result["load_file"] = {k: [v.dtype == dtypes[k], list(v.shape), v.numpy().tolist() == weights[k].tolist()]
                       for k, v in sorted(loaded.items())}
handle = safetensors.torch.safe_open(path, framework="pt")  # transformers uses it without `with` too
piece = handle.get_slice("w")
result["slice"] = [piece.get_dtype(), piece.get_shape(), piece[1:3].numpy().tolist() == weights["w"][1:3].tolist(),
                   type(piece[1:3]).__name__]
with safetensors.torch.safe_open(path, framework="pt") as f:
    result["metadata"] = [f.metadata(), sorted(f.keys())]
header = json.dumps({"b": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}).encode()
with open(bf16_path, "wb") as out:
    out.write(struct.pack("<Q", len(header)) + header + bytes(4))
try:
    safetensors.torch.load_file(bf16_path)
except UnsupportedOpOptionError as error:
    result["bf16"] = isinstance(error, NotImplementedError) and "BF16" in str(error)
empty = torch.empty(size=(2, 3), dtype=torch.float32, device="meta")  # transformers' meta state dict
result["empty_size"] = list(empty.shape)
print(json.dumps(result))
"""


def test_safetensors_pt_framework_and_empty_size_on_mindspore(tmp_path: Any) -> None:
    # before: AttributeError "Module 'msadapter' has no attribute 'UntypedStorage'" at safe_open, and
    # "empty() got an unexpected keyword argument 'size'"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDSPEED_")}
    env.update(PYTHONPATH=str(ROOT), MINDSPEED_AI_FRAMEWORK="mindspore", GLOG_v="3")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SAFETENSORS), str(tmp_path / "w.safetensors"),
                           str(tmp_path / "b.safetensors")], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"load_file": {"i": [True, [2], True], "w": [True, [3, 4], True]},
                      "slice": ["F32", [3, 4], True, "Tensor"], "metadata": [{"format": "pt"}, ["i", "w"]],
                      "bf16": True, "empty_size": [2, 3]}
