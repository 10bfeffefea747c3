"""mindspeed_ms.compat.megatron_training: Megatron-LM's training entry set up on a CPU, on both backends.

Megatron-LM's ``megatron.training`` is not installable here: ``tests/fakes/megatron_lm`` stands in for it
(same module paths, names and signatures, the lines the fixes are about), beside the real megatron-core.
The PyTorch side runs in the reference interpreter (its ``pytorch_cpu`` provider), which also computes
the reference of MindSpeed's fused AdamW with real ``torch._fused_adamw_``; the MindSpore side runs in one
msrun worker (the ``megatron_training`` provider) through MindSpeed's stand-in ``adamw()``.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import BIN, FAKES, ROOT, msrun_command, reference_python, result_line, subprocess_env

from mindspeed_ms.compat import megatron_training as compat
from mindspeed_ms.errors import AdaptationError

STEPS = 5
SHAPES = {"w": (4, 6), "b": (6,)}
#: (amsgrad, maximize, weight_decay) of each fused-AdamW scenario.
SCENARIOS = ((False, False, 0.1), (True, False, 0.0), (False, True, 0.1))
#: float32 rounding over 5 steps; MSAdapter's own AdamW kernel does not run on CPU at all.
RTOL = 1e-5


def test_initialize_megatron_runs_without_cuda_unless_the_caller_says_otherwise() -> None:
    seen: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def initialize_megatron(*args: Any, **kwargs: Any) -> None:
        seen.append((args, kwargs))

    wrapped = compat.allow_no_cuda_wrapper(initialize_megatron)
    wrapped()
    wrapped(None, {}, False, False)
    wrapped(allow_no_cuda=False)
    assert seen == [((), {"allow_no_cuda": True}), ((None, {}, False, False), {}), ((), {"allow_no_cuda": False})]


def test_validation_sees_one_connection_unless_the_user_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []
    wrapped = compat.max_connections_wrapper(lambda args, defaults={}: seen.append(os.environ.get(  # noqa: B006
        compat.MAX_CONNECTIONS_ENV)))
    monkeypatch.delenv(compat.MAX_CONNECTIONS_ENV, raising=False)
    wrapped(object())
    monkeypatch.setenv(compat.MAX_CONNECTIONS_ENV, "8")
    wrapped(object())
    assert seen == ["1", "8"]


def test_a_source_tree_without_built_helpers_finds_the_wheels_after_its_own(tmp_path: Path) -> None:
    path = [str(tmp_path)]
    extended = compat.with_prebuilt_helpers(path)
    assert extended[0] == str(tmp_path)
    assert len(extended) == 2
    built = [name for name in os.listdir(extended[1]) if name.startswith("helpers_cpp")
             and name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]
    assert built, extended[1]
    (tmp_path / built[0]).write_bytes(b"")
    assert compat.with_prebuilt_helpers(path) is path  # a tree that has it is left alone


def test_acl_functions_raise_a_typed_error_naming_the_call() -> None:
    get_soc_name = compat.acl_unavailable("acl.get_soc_name")
    with pytest.raises(compat.AscendRuntimeUnavailableError) as raised:
        get_soc_name()
    assert isinstance(raised.value, (AdaptationError, RuntimeError))
    assert raised.value.function == "acl.get_soc_name"
    assert "acl.get_soc_name()" in str(raised.value)
    assert get_soc_name.__name__ == "get_soc_name"


def test_each_process_has_one_device_and_modules_stay_where_they_compute() -> None:
    module = object()
    assert compat.one_device_per_process() == 1
    assert compat.module_stays_on_cpu(module, 0) is module
    assert compat.skip_fused_kernels(object()) is None
    assert compat.skip_jit_warmup() is None


#: The stand-in entry's set-up, then what it left behind (both backends).
_SETUP = '''
import json, os, sys
sys.path[:0] = [{megatron_lm!r}, {fakes!r}]
import mindspeed_ms.adaptor
import torch
from megatron.core import mpu, tensor_parallel
from megatron.training import initialize, training, arguments
import megatron.core.datasets as datasets

sys.argv = [sys.argv[0], "--distributed-backend", "gloo"]
initialize.initialize_megatron()
initialize.set_jit_fusion_options()
result = {{"mp": mpu.model_parallel_is_initialized(), "tp": mpu.get_tensor_model_parallel_world_size(),
          "tracker": sorted(tensor_parallel.get_cuda_rng_tracker().get_states()),
          "helpers": sys.modules["megatron.core.datasets.helpers_cpp"].__file__,
          "datasets_path": list(datasets.__path__)}}
layer = torch.nn.Linear(2, 2)
result["same_module"] = training.get_model(lambda: layer)[0] is layer
os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
args = arguments.parse_args()
args.tensor_model_parallel_size = 2
arguments.validate_args(args)
result["max_connections"] = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS")
'''

_REFERENCE = _SETUP + '''
import numpy as np
inputs = dict(np.load({inputs!r}))
out = {{}}
for index, (amsgrad, maximize, decay) in enumerate({scenarios!r}):
    params = [torch.tensor(inputs["init/" + n]) for n in {names!r}]
    m = [torch.zeros_like(p) for p in params]; v = [torch.zeros_like(p) for p in params]
    vmax = [torch.zeros_like(p) for p in params]; steps = [torch.tensor(0.0) for p in params]
    for t in range({steps}):
        grads = [torch.tensor(inputs["grad/%d/%s" % (t, n)]) for n in {names!r}]
        for s in steps:
            s += 1
        torch._fused_adamw_(params, grads, m, v, vmax if amsgrad else [], steps, lr=1e-2, beta1=0.9, beta2=0.95,
                            weight_decay=decay, eps=1e-8, amsgrad=amsgrad, maximize=maximize)
    for n, p in zip({names!r}, params):
        out["%d/%s" % (index, n)] = p.numpy()
np.savez({reference!r}, **out)
print(json.dumps(result))
'''

_MINDSPORE = _SETUP + '''
import numpy as np
import acl
try:
    acl.get_soc_name()
except RuntimeError as exc:
    result["acl"] = type(exc).__name__
from mindspeed.core.optimizer.adamw import adamw
inputs = dict(np.load({inputs!r}))
reference = dict(np.load({reference!r}))
deviation = 0.0
for index, (amsgrad, maximize, decay) in enumerate({scenarios!r}):
    params = [torch.tensor(inputs["init/" + n]) for n in {names!r}]
    m = [torch.zeros_like(p) for p in params]; v = [torch.zeros_like(p) for p in params]
    vmax = [torch.zeros_like(p) for p in params]
    step = torch.tensor(0, dtype=torch.int64)
    for t in range({steps}):
        grads = [torch.tensor(inputs["grad/%d/%s" % (t, n)]) for n in {names!r}]
        step = step + 1
        adamw(params, grads, m, v, vmax, step, amsgrad=amsgrad, beta1=0.9, beta2=0.95, lr=1e-2,
              weight_decay=decay, eps=1e-8, maximize=maximize)
    for n, p in zip({names!r}, params):
        expected = reference["%d/%s" % (index, n)]
        deviation = max(deviation, float(np.max(np.abs(p.asnumpy() - expected) / (np.abs(expected) + 1e-6))))
result["adamw_deviation"] = deviation
try:
    torch._fused_adamw_(params, grads, m, v, [], [step] * 2, lr=1e-2, beta1=0.9, beta2=0.95, weight_decay=0.0,
                        eps=1e-8, amsgrad=False, maximize=False, grad_scale=torch.tensor(2.0))
except NotImplementedError as exc:
    result["grad_scale"] = type(exc).__name__
print("RESULT " + json.dumps(result))
'''


def _script(template: str, tmp_path: Path) -> str:
    return textwrap.dedent(template.format(
        megatron_lm=str(FAKES / "megatron_lm"), fakes=str(FAKES), inputs=str(tmp_path / "inputs.npz"),
        reference=str(tmp_path / "reference.npz"), scenarios=SCENARIOS, names=tuple(SHAPES), steps=STEPS))


def _environment(**extra: str) -> dict[str, str]:
    return subprocess_env(drop=("MINDSPEED_", "CUDA_DEVICE"), PYTHONPATH=str(ROOT), **extra)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The stand-in entry's set-up on CPU PyTorch, and real torch._fused_adamw_'s results."""
    tmp_path = tmp_path_factory.mktemp("megatron_training")
    rng = np.random.default_rng(20)
    inputs = {f"init/{name}": rng.standard_normal(shape).astype(np.float32) for name, shape in SHAPES.items()}
    inputs.update({f"grad/{t}/{name}": rng.standard_normal(shape).astype(np.float32)
                   for t in range(STEPS) for name, shape in SHAPES.items()})
    np.savez(tmp_path / "inputs.npz", **inputs)
    script = tmp_path / "reference.py"
    script.write_text(_script(_REFERENCE, tmp_path))
    env = _environment(MASTER_ADDR="127.0.0.1", MASTER_PORT="29517", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    done = subprocess.run([reference_python(), str(script)], capture_output=True, text=True, timeout=600, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    return tmp_path, json.loads(done.stdout.strip().splitlines()[-1])


def _check_setup(result: dict[str, Any]) -> None:
    assert result["mp"]
    assert result["tp"] == 1
    assert "model-parallel-rng" in result["tracker"]  # megatron seeded the tracker: it saw a device
    assert Path(result["helpers"]).parent.is_dir()
    assert "helpers_cpp" in result["helpers"]
    assert result["same_module"]
    assert result["max_connections"] == "1"


def test_the_entry_sets_up_on_cpu_pytorch(reference: tuple[Path, dict[str, Any]]) -> None:
    _check_setup(reference[1])


def test_the_entry_sets_up_on_mindspore_cpu_and_mindspeeds_fused_adamw_matches_pytorch(
        reference: tuple[Path, dict[str, Any]]) -> None:
    tmp_path = reference[0]
    script = tmp_path / "mindspore_worker.py"
    script.write_text(_script(_MINDSPORE, tmp_path))
    env = _environment(MINDSPEED_AI_FRAMEWORK="mindspore", PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    log_dir = tmp_path / "msrun"
    done = subprocess.run(msrun_command(script, workers=1, log_dir=log_dir), capture_output=True, text=True,
                          timeout=900, env=env, cwd=tmp_path)
    log = (log_dir / "worker_0.log").read_text() if (log_dir / "worker_0.log").exists() else done.stderr
    assert done.returncode == 0, log[-4000:]
    result = result_line(log)
    _check_setup(result)
    assert result["acl"] == "AscendRuntimeUnavailableError"
    assert result["adamw_deviation"] < RTOL
    assert result["grad_scale"] == "UnsupportedOptimizerFeatureError"
