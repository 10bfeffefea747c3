"""MindSpeed's own bucket sync, registered through the adopted manager over our built-in fix, computes what
PyTorch computes on the CPU.

MindSpeed-LLM's ``megatron_basic`` feature registers MindSpeed's ``_ParamAndGradBucketGroup`` sync methods;
our ``megatron_core`` provider registers CPU fixes for two of them. Built-in replacements are fallbacks, so
MindSpeed's take the targets (status: ``superseded``). MindSpeed's versions reduce each bucket with a
collective straight into a view of the grad buffer; on MindSpore's CPU backend such a collective used to
return normally and change nothing (every rank kept its own gradients, silently). The platform fix
(``msadapter_cpu``: collectives into views write back) is what makes them right: the data-parallel run with
MindSpeed's methods matches real PyTorch at every step, and the same run without that fix fails parity.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from _helpers import EXAMPLE, FAKES, reference_python

from mindspeed_ms.bootstrap.parity_runner import run_parity

GROUP = "megatron.core.distributed.param_and_grad_buffer._ParamAndGradBucketGroup"

SCRIPT = """
import mindspeed_ms.adaptor  # first, as in the example
import json
import os
import sys
from mindspeed_ms.adaptation.framework import get_ai_framework

if get_ai_framework() == "mindspore":
    from mindspeed.patch_utils import MindSpeedPatchesManager as pm  # adopted: backed by mindspeed_ms's registry
    from mindspeed.core.distributed import param_and_grad_buffer as mindspeed_buffer
    from mindspeed_ms import MindSporeAdaptation

    for name in ("start_param_sync", "finish_param_sync", "start_grad_sync", "finish_grad_sync"):
        pm.register_patch({group!r} + "." + name, getattr(mindspeed_buffer, name))  # force_patch=False
    if {without_platform_fix!r}:
        from mindspeed_ms.adaptation import default_registry
        default_registry().unregister("msadapter.distributed.distributed_c10d.all_reduce")
    pm.apply_patches()
    if os.environ.get("RANK", "0") == "0":
        with open({status_file!r}, "w") as out:
            json.dump([s.to_dict() for s in MindSporeAdaptation.status() if s.target.startswith({group!r})], out)

sys.path.insert(0, {examples!r})
import pretrain_gpt
pretrain_gpt.main()
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, iterations: int, without_platform_fix: bool):
    monkeypatch.setenv("PYTHONPATH", str(FAKES))  # the MindSpeed stand-in (and its dist-info)
    status_file = tmp_path / "status.json"
    script = tmp_path / "mindspeed_bucket_sync.py"
    script.write_text(textwrap.dedent(SCRIPT.format(group=GROUP, without_platform_fix=without_platform_fix,
                                                    status_file=str(status_file), examples=str(EXAMPLE.parent))))
    report = run_parity(script, ["--train-iters", str(iterations)], reference_python=reference_python(), nproc=2,
                        work_dir=tmp_path / "work")
    return report, json.loads(status_file.read_text())


def test_mindspeeds_bucket_sync_over_our_fallback_matches_pytorch_with_data_parallelism(tmp_path, monkeypatch):
    report, statuses = _run(tmp_path, monkeypatch, 10, without_platform_fix=False)
    by_target = {s["target"].rpartition(".")[2]: s for s in statuses}
    for name in ("start_param_sync", "start_grad_sync"):
        assert by_target[name]["replacement"] == f"mindspeed.core.distributed.param_and_grad_buffer.{name}"
        (waiting,) = by_target[name]["superseded"]
        assert f"mindspeed_ms.compat.megatron_parallel.{name}" in waiting
        assert "'megatron_core'" in waiting
        assert by_target[name]["provider"] == "mindspeed.patch_utils"
    assert by_target["finish_grad_sync"]["superseded"] == []
    assert len(report.ranks) == 2
    for rank in report.ranks:
        assert not rank.problems, rank.problems
        assert len(rank.steps) == 10
        for step in rank.steps:
            assert step.loss_rel <= 1e-4, (rank.rank, step)
            assert step.grad_norm_rel <= 1e-3, (rank.rank, step)
    assert report.ok


def test_without_the_collective_write_back_the_same_run_fails_parity(tmp_path, monkeypatch):
    report, _ = _run(tmp_path, monkeypatch, 3, without_platform_fix=True)
    assert not report.ok
    assert max(step.grad_norm_rel for rank in report.ranks for step in rank.steps) > 1e-3
