"""HF models save on MindSpore: transformers' dtype name in ``save_pretrained``, safetensors' ``torch`` writer,
``torch._dynamo.eval_frame`` for accelerate's readers.

What MindSpeed-LLM's ``convert_ckpt.py --save-model-type hf`` (Megatron -> HF) needs of transformers 4.57.1 (its pin),
accelerate 1.10.1 and safetensors 0.8 on MSAdapter. ``save_pretrained``'s dtype line is a stand-in shaped exactly like
transformers 4.57.1's (transformers is not in the test environment); the MindSpore side runs in a subprocess, with
a stand-in of accelerate's ``utils/other.py`` readers where accelerate is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
from _helpers import ROOT

from mindspeed_ms.compat import transformers_save


class _MindSporeDtype:
    """Prints as MindSpore's dtypes do (``str(mindspore.float32) == "Float32"``: no ``torch.`` prefix)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _MindSporeDtype) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


# transformers 4.57.1 modeling_utils: the lines of save_pretrained that name the dtype, and the module function
MODELING_UTILS = '''
def get_parameter_dtype(parameter):
    return parameter.param_dtype

class PreTrainedModel:
    def __init__(self, dtype, fail=False):
        self.param_dtype, self.fail, self.config = dtype, fail, type("Config", (), {})()

    def save_pretrained(self, save_directory):
        model_to_save = self
        dtype = get_parameter_dtype(model_to_save)
        model_to_save.config.dtype = str(dtype).split(".")[1]
        if self.fail:
            raise OSError("disk full")
        return save_directory
'''


@pytest.fixture()
def modeling_utils(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("_standin_modeling_utils")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(MODELING_UTILS, module.__name__, "exec"), module.__dict__)  # noqa: S102 (the stand-in's source)
    return module


def test_the_original_fails_on_a_mindspore_dtype(modeling_utils: types.ModuleType) -> None:
    with pytest.raises(IndexError):
        modeling_utils.PreTrainedModel(_MindSporeDtype("Float32")).save_pretrained("out")


def test_save_pretrained_names_the_dtype_as_pytorch(modeling_utils: types.ModuleType) -> None:
    model_class = modeling_utils.PreTrainedModel
    original = modeling_utils.get_parameter_dtype
    save = transformers_save.save_pretrained_wrapper(model_class.save_pretrained)
    model = model_class(_MindSporeDtype("BFloat16"))
    assert save(model, "out") == "out"
    assert model.config.dtype == "bfloat16"  # what PyTorch writes for torch.bfloat16
    assert modeling_utils.get_parameter_dtype is original  # restored
    failing = model_class(_MindSporeDtype("Float32"), fail=True)
    with pytest.raises(OSError, match="disk full"):
        save(failing, "out")
    assert failing.config.dtype == "float32"
    assert modeling_utils.get_parameter_dtype is original  # restored on error
    named = transformers_save.TorchNamedDtype(_MindSporeDtype("Float16"))
    assert str(named) == "torch.float16"
    assert named == _MindSporeDtype("Float16")
    assert named.name == "Float16"
    assert hash(named) == hash(_MindSporeDtype("Float16"))
    assert named != _MindSporeDtype("Float32")


SAVE = """
import json, sys
import mindspeed_ms.adaptor
import torch
import safetensors.torch
from mindspeed_ms.compat.errors import UnsupportedOpOptionError

path, bf16_path = sys.argv[1], sys.argv[2]
buffer = torch.arange(12, dtype=torch.float32) / 8
viewed = torch.nn.Parameter(torch.zeros(2, 2))
viewed.data = buffer[4:8].view(2, 2)  # megatron's distributed optimizer maps parameters so
tensors = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3) / 3, "i": torch.tensor([1, -2]),
           "h": torch.ones(3, dtype=torch.float16) / 3, "viewed": viewed.detach()}
safetensors.torch.save_file(tensors, path, metadata={"format": "pt"})
result = {}
try:
    safetensors.torch.save_file({"b": torch.ones(2, dtype=torch.bfloat16)}, bf16_path)
except UnsupportedOpOptionError as error:
    result["bf16"] = isinstance(error, NotImplementedError) and "bfloat16" in str(error)
result["eval_frame_before"] = hasattr(torch._dynamo, "eval_frame")  # (an explicit `import torch._dynamo` adds it)
from accelerate.utils.other import has_compiled_regions, is_compiled_module  # the stand-in, on PYTHONPATH
linear = torch.nn.Sequential(torch.nn.Linear(2, 2))
result["compiled"] = [is_compiled_module(linear), has_compiled_regions(linear)]
result["eval_frame_after"] = hasattr(torch._dynamo, "eval_frame")
print(json.dumps(result))
"""

# accelerate 1.10.1 utils/other.py: the two readers of torch._dynamo.eval_frame, verbatim in behaviour
ACCELERATE_OTHER = '''
import torch


def is_compiled_module(module):
    if not hasattr(torch, "_dynamo"):
        return False
    return isinstance(module, torch._dynamo.eval_frame.OptimizedModule)


def has_compiled_regions(module):
    if not hasattr(torch, "_dynamo"):
        return False
    if module._modules:
        for submodule in module.modules():
            if isinstance(submodule, torch._dynamo.eval_frame.OptimizedModule):
                return True
    return False
'''


def _standin_accelerate(root: Path) -> None:
    package = root / "accelerate"
    (package / "utils").mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "1.10.1"\n')
    (package / "utils" / "__init__.py").write_text("")
    (package / "utils" / "other.py").write_text(ACCELERATE_OTHER)
    info = root / "accelerate-1.10.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: accelerate\nVersion: 1.10.1\n")


def test_safetensors_torch_writer_and_eval_frame_on_mindspore(tmp_path: Path) -> None:
    # before: SafetensorError 'Unknown dtype "Float32"' at save_file, and AttributeError "module 'msadapter._dynamo'
    # has no attribute 'eval_frame'" in is_compiled_module
    np = pytest.importorskip("numpy")
    from safetensors.numpy import load_file

    _standin_accelerate(tmp_path / "site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDSPEED_")}
    env.update(PYTHONPATH=f"{ROOT}:{tmp_path / 'site'}", MINDSPEED_AI_FRAMEWORK="mindspore", GLOG_v="3")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SAVE), str(tmp_path / "w.safetensors"),
                           str(tmp_path / "b.safetensors")], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"bf16": True, "eval_frame_before": False, "compiled": [False, False], "eval_frame_after": True}
    saved = load_file(str(tmp_path / "w.safetensors"))  # read back without MindSpore: numpy
    assert {k: (str(v.dtype), list(v.shape)) for k, v in saved.items()} == {
        "w": ("float32", [2, 3]), "i": ("int64", [2]), "h": ("float16", [3]), "viewed": ("float32", [2, 2])}
    assert np.array_equal(saved["w"], np.arange(6, dtype=np.float32).reshape(2, 3) / 3)
    assert np.array_equal(saved["viewed"], np.arange(4, 8, dtype=np.float32).reshape(2, 2) / 8)  # the view's values
    assert saved["i"].tolist() == [1, -2]
    assert np.array_equal(saved["h"], np.ones(3, dtype=np.float16) / 3)
    assert not (tmp_path / "b.safetensors").exists()
