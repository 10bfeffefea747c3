"""mindspeed_ms.compat.pytorch_cpu: megatron-core's CUDA assumptions on a CPU build of PyTorch.

The tracker and clipping checks run in the PyTorch reference interpreter (``.venv-ref``, built by
``scripts/make_reference_venv.sh``; MSAdapter's torch is not real torch) in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
from _helpers import ROOT, reference_python, subprocess_env

from mindspeed_ms.compat import pytorch_cpu


class _Device:
    def __init__(self, kind: str) -> None:
        self.type = kind


def test_cpu_device_wrapper_sends_accelerator_devices_to_the_cpu() -> None:
    seen: list = []

    def create(*shape: int, device=None):  # noqa: ANN001, ANN202 - stands in for torch.empty
        seen.append(device)
        return shape

    wrapped = pytorch_cpu.cpu_device_wrapper(create)
    for device in ("cuda", "cuda:1", 0, _Device("cuda"), "npu:0"):
        assert wrapped(2, device=device) == (2,)
    cpu = _Device("cpu")
    wrapped(2, device=cpu)
    wrapped(2, device="cpu")
    wrapped(2)
    assert seen == ["cpu"] * 5 + [cpu, "cpu", None]
    assert pytorch_cpu.current_device() == 0


SCRIPT = """
import json, torch
from megatron.core.tensor_parallel.random import CudaRNGStatesTracker
from mindspeed_ms.compat import pytorch_cpu

tracker = CudaRNGStatesTracker()
pytorch_cpu.cpu_tracker_add(tracker, "model-parallel-rng", 123)
errors = []
for name, seed in (("model-parallel-rng", 5), ("other", 123)):
    try:
        pytorch_cpu.cpu_tracker_add(tracker, name, seed)
    except Exception as exc:
        errors.append(str(exc))
torch.manual_seed(7)
outside_before = torch.get_rng_state().clone()
with pytorch_cpu.cpu_tracker_fork(tracker, "model-parallel-rng"):
    first = torch.rand(3).tolist()
restored = bool(torch.equal(outside_before, torch.get_rng_state()))
with pytorch_cpu.cpu_tracker_fork(tracker, "model-parallel-rng"):
    second = torch.rand(3).tolist()
generator = torch.Generator(); generator.manual_seed(123)
expected = torch.rand(6, generator=generator).tolist()

param = torch.nn.Parameter(torch.ones(4)); param.grad = torch.full((4,), 2.0)
pytorch_cpu.clip_grad_by_total_norm_fp32([param], max_norm=1.0, total_norm=4.0)
print(json.dumps({"errors": errors, "first": first, "second": second, "expected": expected, "restored": restored,
                  "clipped": param.grad.tolist()}))
"""


def test_tracker_and_clipping_on_cpu_pytorch() -> None:
    python = reference_python()
    env = subprocess_env(PYTHONPATH=str(ROOT))
    done = subprocess.run([python, "-c", textwrap.dedent(SCRIPT)], capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["errors"] == ["cuda rng state model-parallel-rng already exists", "seed 123 already exists"]
    # the named state is the CPU generator seeded with 123, and it advances across forks
    assert result["first"] + result["second"] == pytest.approx(result["expected"])
    assert result["restored"]
    assert result["clipped"] == pytest.approx([2.0 / (4.0 + 1e-6)] * 4)


ARMING = """
import sys
import mindspeed_ms.adaptor
# only the engine's import watcher is armed (its when_imported): no registry until megatron is imported
engine_after_adaptor = "mindspeed_ms.engine.registry" in sys.modules
import megatron.core.tensor_parallel.random as random
print(engine_after_adaptor, random.CudaRNGStatesTracker.add.__module__)
"""


def test_pytorch_mode_without_cuda_arms_the_provider_only_when_megatron_is_imported() -> None:
    python = reference_python()
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    done = subprocess.run([python, "-c", textwrap.dedent(ARMING)], capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["False", "mindspeed_ms.compat.pytorch_cpu"]
    assert "PyTorch backend without CUDA" in done.stderr


def test_tensor_to_keeps_an_accelerator_move_on_the_cpu_and_leaves_the_rest() -> None:
    seen: list = []

    def to(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202 - stands in for torch.Tensor.to
        seen.append((args, kwargs))
        return self

    wrapped = pytorch_cpu.tensor_to_cpu_wrapper(to)
    marker = object()
    assert wrapped(marker, device=0) is marker
    wrapped(marker, "cuda:1", non_blocking=True)
    wrapped(marker, _Device("cuda"))
    wrapped(marker, "float32")
    wrapped(marker, device="cpu")
    assert seen == [((), {"device": "cpu"}), (("cpu",), {"non_blocking": True}), (("cpu",), {}),
                    (("float32",), {}), ((), {"device": "cpu"})]


ROTARY = """
import mindspeed_ms.adaptor
import torch
from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding

rotary = RotaryEmbedding(kv_channels=8, rotary_percent=1.0)  # arange(device=torch.cuda.current_device())
freqs = rotary(4)  # first forward: inv_freq.to(device=torch.cuda.current_device())
print(rotary.inv_freq.device.type, freqs.device.type, tuple(freqs.shape))
"""


def test_megatrons_rotary_embedding_builds_and_runs_on_cpu_pytorch() -> None:
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    done = subprocess.run([reference_python(), "-c", textwrap.dedent(ROTARY)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["cpu", "cpu", "(4,", "1,", "1,", "8)"]


RNG_CHECKPOINT = """
import json
import mindspeed_ms.adaptor
import torch
import megatron.core.tensor_parallel.random  # arms the pytorch_cpu provider
from mindspeed_ms.compat import random_state
from mindspeed_ms.compat.errors import RandomStateError


def get_rng_state():  # shaped like Megatron-LM core_v0.12.1's megatron/training/checkpointing.py get_rng_state
    return {'torch_rng_state': torch.get_rng_state(), 'cuda_rng_state': torch.cuda.get_rng_state()}


torch.manual_seed(5)
saved = get_rng_state()
drawn = torch.rand(3)
torch.cuda.set_rng_state(saved['cuda_rng_state'])  # as load_checkpoint restores it
result = {"same_state": bool(torch.equal(saved['torch_rng_state'], saved['cuda_rng_state'])),
          "replays": bool(torch.equal(torch.rand(3), drawn))}
mindspore_state = torch.zeros(random_state.STATE_BYTES, dtype=torch.uint8)
mindspore_state[:4] = torch.tensor(list(random_state.STATE_MAGIC), dtype=torch.uint8)
before = torch.get_rng_state()
try:
    torch.set_rng_state(mindspore_state)
except RandomStateError as error:
    result["typed"] = isinstance(error, RuntimeError) and "--no-load-rng" in str(error)
result["unchanged"] = bool(torch.equal(before, torch.get_rng_state()))
try:
    torch.set_rng_state(torch.zeros(544, dtype=torch.uint8))  # not MindSpore's: PyTorch's own check
except RandomStateError:
    result["other_left_to_pytorch"] = False
except RuntimeError:
    result["other_left_to_pytorch"] = True
print(json.dumps(result))
"""


def test_megatron_lm_checkpoint_rng_state_on_cpu_pytorch() -> None:
    # Megatron-LM's save_checkpoint stores torch.cuda.get_rng_state() and load_checkpoint sets it: both raised
    # without CUDA ('Torch not compiled with CUDA enabled'); MindSpore's state is refused with a typed error
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    done = subprocess.run([reference_python(), "-c", textwrap.dedent(RNG_CHECKPOINT)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"same_state": True, "replays": True, "typed": True, "unchanged": True,
                      "other_left_to_pytorch": True}


LEGACY_DISTOPT_LOAD = """
import json
from types import SimpleNamespace
import torch
from mindspeed_ms.compat import checkpoint

param = torch.nn.Parameter(torch.zeros(6))
shard = param.view(-1)[2:5]  # megatron's fp32 main param: a view of the model parameter (a leaf requiring grad)


def set_states(self, model_param, tensors):  # DistributedOptimizer._set_main_param_and_optimizer_states's copy
    dst_tensors = {"param": shard}
    for key in dst_tensors:
        dst_tensors[key].copy_(tensors[key])


owner = SimpleNamespace(ddp_config=SimpleNamespace(use_custom_fsdp=False),
                        config=SimpleNamespace(use_precision_aware_optimizer=False))
loaded = {"param": torch.ones(3), "step": torch.tensor(5.0)}
result = {}
try:
    set_states(owner, param, loaded)
except RuntimeError as error:
    result["original"] = "leaf Variable that requires grad" in str(error)
checkpoint.set_states_keeping_step_wrapper(set_states)(owner, param, loaded)
result["param"] = param.tolist()
result["grad_mode"] = torch.is_grad_enabled()
print(json.dumps(result))
"""


def test_legacy_torch_format_distributed_optimizer_load_on_cpu_pytorch() -> None:
    # Megatron-LM's torch-format resume with --use-distributed-optimizer (load_parameter_state_from_dp_zero) copies
    # into views of fp32 parameters with grad on: real PyTorch raised, so did MindSpore; the copy runs under no_grad
    env = subprocess_env(drop=("MINDSPEED_",), PYTHONPATH=str(ROOT))
    done = subprocess.run([reference_python(), "-c", textwrap.dedent(LEGACY_DISTOPT_LOAD)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "original": True, "param": [0.0, 0.0, 1.0, 1.0, 1.0, 0.0], "grad_mode": True}
