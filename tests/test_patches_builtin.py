"""The built-in providers of mindspeed_ms/patches: what they register per device, and what it fixes.

The last test applies the whole built-in set in a fresh interpreter (as ``import mindspeed_ms.adaptor``
with ``--ai-framework mindspore`` does) and checks each MSAdapter/CPU trap through the torch API.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mindspeed_ms import PatchRegistry, device
from mindspeed_ms.adaptation import Adaptation, Settings

CPU_ONLY = {"msadapter_cpu", "msadapter_cpu_kernels", "msadapter_cpu_edges", "megatron_core", "megatron_training",
            "tensor_device", "random_state"}


@pytest.fixture(autouse=True)
def fresh_device_cache() -> Iterator[None]:
    device.clear_device_cache()
    yield
    device.clear_device_cache()


def _registered(monkeypatch: pytest.MonkeyPatch, target: str | None) -> PatchRegistry:
    if target is None:
        monkeypatch.delenv(device.DEVICE_ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(device.DEVICE_ENV_VAR, target)
    registry = PatchRegistry(name="builtin")
    Adaptation(settings=Settings(), argv=[], framework="mindspore").run_providers(registry)
    return registry


def test_every_builtin_patch_says_why_and_which_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    statuses = _registered(monkeypatch, None).status()
    assert {status.provider for status in statuses} == {"msadapter", "msadapter_cpu", "msadapter_cpu_kernels",
                                                         "msadapter_cpu_edges", "megatron_core", "megatron_training",
                                                         "third_party", "mindspeed", "mindspeed_patch_manager",
                                                         "checkpoint", "tensor_device", "random_state"}
    for status in statuses:
        assert status.purpose, status.target
        if "block" not in status.kinds:
            assert status.requires, status.target


def test_every_builtin_patch_is_named_at_its_providers_file(monkeypatch: pytest.MonkeyPatch) -> None:
    import mindspeed_ms.patches

    folder = Path(mindspeed_ms.patches.__path__[0])
    for status in _registered(monkeypatch, None).status():
        files = {Path(site.rpartition(":")[0]) for site in status.sources}
        assert {file.parent for file in files} == {folder}, status
        if len(files) == 1:  # registered by one provider: its own file, or one of its parts (_<provider>_<part>.py)
            (file,) = files
            assert file == folder / f"{status.provider}.py" or file.name.startswith(f"_{status.provider}_"), status


def test_cpu_gets_the_cpu_backend_patches(monkeypatch: pytest.MonkeyPatch) -> None:
    targets = {status.target for status in _registered(monkeypatch, None).status()}
    assert {"mindspore.common.tensor.Tensor.zero_", "msadapter.ops.creation.empty",
            "megatron.core.tensor_parallel.cross_entropy.VocabParallelCrossEntropy.calculate_gradients",
            "megatron.core.transformer.dot_product_attention.DotProductAttention.forward",
            "torch_npu.npu_rms_norm", "transformer_engine", "apex", "msadapter.random.manual_seed"} <= targets



def test_the_faster_kernels_turn_off_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(device.DEVICE_ENV_VAR, raising=False)
    registry = PatchRegistry(name="builtin")
    settings = Settings(disabled=frozenset({"msadapter_cpu_kernels"}))
    Adaptation(settings=settings, argv=[], framework="mindspore").run_providers(registry)
    statuses = registry.status()
    providers = {status.provider for status in statuses}
    assert "msadapter_cpu" in providers
    assert "msadapter_cpu_kernels" not in providers
    kept = {status.target for status in statuses}
    # gelu keeps the edges provider's bf16/fp16 wrap; the host kernel's patch of it is gone
    kernel_sites = {status.target for status in statuses for site in status.sources
                    if Path(site.rpartition(":")[0]).name == "msadapter_cpu_kernels.py"}
    assert not kernel_sites
    assert "mindspore.common.tensor.Tensor.zero_" in kept
    everything = {status.target for status in _registered(monkeypatch, None).status()
                  for site in status.sources if Path(site.rpartition(":")[0]).name == "msadapter_cpu_kernels.py"}
    assert "msadapter.nn.functional.gelu" in everything

def test_ascend_gets_no_cpu_only_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    statuses = _registered(monkeypatch, "Ascend").status()
    assert not {status.provider for status in statuses} & CPU_ONLY
    targets = {status.target for status in statuses}
    assert {"transformer_engine", "apex", "msadapter.random.manual_seed",
            "mindspeed.ops.npu_matmul_add.npu_matmul_add_fp32"} <= targets


SCRIPT = textwrap.dedent("""
    import numpy as np
    from mindspeed_ms.adaptation import execute_mindspore

    report = execute_mindspore()
    assert report.failed == 0, report.to_dict()
    import torch

    x = torch.ones(3, dtype=torch.float32)
    x.add_(2.0); x.mul_(2.0); x.sub_(1.0); x.div_(5.0)
    assert x.tolist() == [1.0, 1.0, 1.0], x
    x.masked_fill_(torch.tensor([True, False, True]), 0.0)
    assert x.tolist() == [0.0, 1.0, 0.0], x
    x.zero_()
    assert x.tolist() == [0.0, 0.0, 0.0], x
    buffer = torch.empty(4, dtype=torch.float32, device=torch.cuda.current_device())
    assert float((buffer * 0 + 1).sum()) == 4.0
    assert abs(float(torch.norm(torch.full((4,), 2.0, dtype=torch.float32))) - 4.0) < 1e-6
    assert torch.cuda.is_available() is False
    # the device rule (README, "Device reported on CPU"): a tensor says where it is, requests name the accelerator
    assert (buffer.device.type, buffer.is_cpu, buffer.is_cuda) == ("cpu", True, False), buffer.device
    assert torch.nn.Parameter(torch.ones(2)).device == torch.device("cpu")

    draws = []
    for _ in range(2):
        torch.manual_seed(7)
        weight = torch.empty(3, 4, dtype=torch.float32)
        torch.nn.init.normal_(weight, mean=0.0, std=0.02)
        draws.append(weight.numpy().copy())
    assert (draws[0] == draws[1]).all(), draws

    for blocked in ("apex", "transformer_engine"):
        try:
            __import__(blocked)
        except ModuleNotFoundError:
            pass
        else:
            raise AssertionError(blocked + " is importable")

    from megatron.core.tensor_parallel.cross_entropy import VocabParallelCrossEntropy as CE

    rng = np.random.RandomState(0)
    logits = rng.randn(3, 2, 8).astype(np.float32)
    target = rng.randint(0, 8, size=(3, 2))
    softmax = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    grad_out = rng.rand(3, 2).astype(np.float32)
    grad_2d, arange_1d, update, grad_input = CE.prepare_gradient_calculation_operands(
        torch.tensor(softmax), torch.zeros(3, 2, dtype=torch.bool))
    grad = CE.calculate_gradients(grad_2d, arange_1d, torch.tensor(target.reshape(-1)), update, grad_input,
                                  torch.tensor(grad_out))
    expected = (softmax - np.eye(8)[target]) * grad_out[..., None]
    assert np.abs(grad.numpy() - expected).max() < 1e-6, np.abs(grad.numpy() - expected).max()
    print("ALL TRAPS FIXED")
""")


def test_applied_builtin_set_fixes_the_cpu_traps_through_the_torch_api(tmp_path: pytest.TempPathFactory) -> None:
    env = {key: value for key, value in os.environ.items() if key != device.DEVICE_ENV_VAR}
    env.update(GLOG_v="3", MINDSPEED_MS_LOG_LEVEL="WARNING")
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert "ALL TRAPS FIXED" in done.stdout, done.stdout[-3000:] + done.stderr[-5000:]
