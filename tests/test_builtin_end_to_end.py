"""The built-in patch set end to end, in fresh interpreters of this environment (issue 5's must-shows).

- ``mindspeed-ms patches --ai-framework mindspore --apply`` lists every built-in patch with a reason;
- ``mindspeed-ms verify --static`` passes for every megatron-core target, importing nothing;
- a training script that imports ``mindspeed_ms.adaptor`` with ``--ai-framework mindspore --use-ascend-coc``
  and then imports (the stand-in) MindSpeed gets the MindSpore implementations, ``coc_ops`` included.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from _helpers import FAKES, subprocess_env

CLI = Path(sys.executable).parent / "mindspeed-ms"


def _env(**extra: str) -> dict[str, str]:
    return subprocess_env(drop=("MINDSPEED_",), **extra)


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=300, env=_env(**env))


def test_patches_apply_lists_every_builtin_patch_with_a_reason() -> None:
    done = _cli("patches", "--ai-framework", "mindspore", "--apply", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    patches = data["patches"]
    providers = {p["provider"] for p in patches}
    assert {"third_party", "msadapter", "msadapter_cpu", "megatron_core", "mindspeed"} <= providers
    assert all(p.get("purpose") for p in patches), [p["target"] for p in patches if not p.get("purpose")]
    states = {p["target"]: p["state"] for p in patches}
    assert states["transformer_engine"] == "applied"
    assert states["apex"] == "applied"
    assert states["mindspore.common.tensor.Tensor.zero_"] == "applied"
    # MindSpeed is not installed in this environment: its patches are skipped, with the reason.
    mindspeed = [p for p in patches if p["provider"] == "mindspeed"]
    assert mindspeed
    assert all(p["state"] == "skipped" and "mindspeed" in p["reason"] for p in mindspeed)
    assert not [p for p in patches if p["state"] == "failed"]


def test_static_verify_passes_for_every_megatron_core_target() -> None:
    done = _cli("verify", "--static", "--ai-framework", "mindspore", "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["ok"] is True
    assert data["static"] is True
    core = [c for c in data["targets"] if c["target"].startswith("megatron.core.")]
    assert core
    assert all(c["state"] == "ok" for c in core), [c for c in core if c["state"] != "ok"]
    # Megatron-LM's training package is never in the megatron-core wheel: its patches wait for a checkout
    training = [c for c in data["targets"] if c["target"].startswith(("megatron.training.", "megatron.legacy."))]
    assert training, training
    assert all(c["state"] == "skipped" and "megatron-lm is not installed" in c["reason"] for c in training), training


SCRIPT = """
import mindspeed_ms.adaptor
import sys
import mindspeed_ms.ops as ops
from mindspeed.ops import lcal_functional
from mindspeed.ops.npu_matmul_add import npu_matmul_add_fp32
coc = lcal_functional.coc_ops
print("RESULT", {
    "coc_class": lcal_functional.CoCOperations.matmul_all_reduce is ops.matmul_all_reduce,
    "coc_singleton": coc.pure_matmul.__func__ is ops.pure_matmul,
    "matmul_add": npu_matmul_add_fp32 is ops.npu_matmul_add_fp32,
    "torch_is_msadapter": type(sys.modules["torch"].__spec__.loader).__module__.startswith("msadapter"),
})
"""


def test_training_script_importing_mindspeed_after_the_adaptor_gets_mindspore_ops(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = _env(PYTHONPATH=str(FAKES))
    done = subprocess.run([sys.executable, str(script), "--ai-framework", "mindspore", "--use-ascend-coc"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    result = ast.literal_eval(line[len("RESULT "):])
    assert result == {"coc_class": True, "coc_singleton": True, "matmul_add": True, "torch_is_msadapter": True}
    assert "MindSpore backend" in done.stderr
