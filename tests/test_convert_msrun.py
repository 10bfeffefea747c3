"""A converted launch script really launches: a torchrun script is converted by the installed
``mindspeed-ms convert-launch`` and the result is run with bash and the real msrun (2 workers on 127.0.0.1);
the workers form a MindSpore cluster of the right size, all-reduce across it, and see ``--ai-framework
mindspore`` on their command line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from _helpers import free_port, subprocess_env, worker_logs

WORKER = """
import json, os, sys
from mindspeed_ms.adaptation.framework import get_ai_framework
from mindspore import Tensor, ops
from mindspore.communication import get_group_size, get_rank, init

init()  # every process msrun starts calls it: the scheduler serves the cluster, the workers join it
if os.environ.get("MS_ROLE") == "MS_WORKER":
    record = {"argv": sys.argv[1:], "framework": get_ai_framework(sys.argv[1:], {}), "rank": get_rank(),
              "size": get_group_size(), "total": float(ops.AllReduce()(Tensor([float(get_rank() + 1)])).asnumpy()[0])}
    with open(os.path.join(os.environ["OUT_DIR"], f"MS_WORKER_{record['rank']}.json"), "w") as stream:
        json.dump(record, stream)
"""

TORCHRUN_SCRIPT = """#!/bin/bash
# a torchrun launch, PyTorch-backend style (this comment stays)
NPUS_PER_NODE=2
NNODES=1
NODE_RANK=0
WORLD_SIZE=$(($NPUS_PER_NODE*$NNODES))
DISTRIBUTED_ARGS="
    --nproc_per_node $NPUS_PER_NODE \\
    --nnodes $NNODES \\
    --node_rank $NODE_RANK \\
    --master_addr 127.0.0.1 \\
    --master_port $PORT \\
    --rdzv_backend c10d
"
TRAIN_ARGS="--lr 0.1 --use-ascend-mc2"
torchrun $DISTRIBUTED_ARGS worker.py \\
    $TRAIN_ARGS \\
    --seq-length 16 \\
    2>&1 | tee launch.log
"""


def test_converted_torchrun_script_runs_under_real_msrun_with_two_workers(tmp_path: Path) -> None:
    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "run.sh").write_text(TORCHRUN_SCRIPT)
    env = subprocess_env(bin_first=True, OUT_DIR=str(tmp_path), PORT=str(free_port()))
    convert = subprocess.run(
        ["mindspeed-ms", "convert-launch", "run.sh", "-o", "ms.sh", "--drop-unsupported", "--join", "True",
         "--cluster-time-out", "120", "--log-dir", str(tmp_path / "msrun_log")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert convert.returncode == 0, convert.stderr
    converted = (tmp_path / "ms.sh").read_text()
    assert "\ntorchrun" not in converted
    assert "--rdzv_backend" not in converted
    assert "--use-ascend-mc2" not in converted
    assert "--worker_num $WORLD_SIZE" in converted
    assert "# a torchrun launch, PyTorch-backend style (this comment stays)" in converted

    run = subprocess.run(["bash", "ms.sh"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
                         check=False)
    logs = worker_logs(tmp_path / "msrun_log", "*.log", tail=3000)
    records = [json.loads(path.read_text()) for path in sorted(tmp_path.glob("MS_WORKER_*.json"))]
    assert run.returncode == 0, f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}\n{logs}"
    assert len(records) == 2, f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}\n{logs}"
    assert sorted(record["rank"] for record in records) == [0, 1]
    for record in records:
        assert record["size"] == 2
        assert record["total"] == 3.0  # 1 + 2 summed across the cluster
        assert record["framework"] == "mindspore"
        assert record["argv"] == ["--lr", "0.1", "--seq-length", "16", "--ai-framework", "mindspore"]
    assert (tmp_path / "launch.log").exists()  # the pipe to tee survived the conversion
