"""CoC ops (lcal_functional): single process here; across 2 and 1 msrun workers via ops_workers/coc_worker.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mindspore import Tensor

from mindspeed_ms.ops import (
    all_gather_matmul,
    all_gather_matmul_v2,
    dispatch_path,
    matmul_all_reduce,
    matmul_reduce_scatter,
    pure_matmul,
)

WORKER = Path(__file__).parent / "ops_workers" / "coc_worker.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_msrun(tmp_path: Path, workers: int, mode: str) -> str:
    log_dir = tmp_path / f"msrun_{workers}_{mode}"
    env = dict(os.environ, GLOG_v="3", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    cmd = [
        "msrun",
        f"--worker_num={workers}",
        f"--local_worker_num={workers}",
        f"--master_port={free_port()}",
        "--join=True",
        "--cluster_time_out=120",
        f"--log_dir={log_dir}",
        str(WORKER),
        mode,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    logs = "\n".join(
        f"--- {p.name}\n{p.read_text(errors='replace')[-6000:]}" for p in sorted(log_dir.glob("worker_*.log"))
    )
    assert proc.returncode == 0, (
        f"msrun failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}\n{logs}"
    )
    return logs


def test_coc_ops_across_two_msrun_workers_with_megatron_tp_group_and_explicit_groups(tmp_path: Path) -> None:
    logs = run_msrun(tmp_path, 2, "megatron")
    for rank in (0, 1):
        assert f"rank {rank}: ALL PASSED" in logs, logs
        assert f"rank {rank}/2 [megatron] matmul_reduce_scatter: ok" in logs, logs
    assert logs.count("MISMATCH") == 0


def test_coc_ops_on_one_msrun_worker_with_mindspore_communication(tmp_path: Path) -> None:
    logs = run_msrun(tmp_path, 1, "mindspore")
    assert "rank 0: ALL PASSED" in logs, logs
    assert logs.count(": ok") == 14, logs


# Without msrun (no communication initialised) the group is a single rank.
M, K, N = 4, 6, 3


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal((M, K)).astype(np.float32),
        rng.standard_normal((K, N)).astype(np.float32),
        rng.standard_normal(N).astype(np.float32),
    )


def test_coc_ops_take_the_composite_on_cpu() -> None:
    names = ["matmul_all_reduce", "all_gather_matmul", "all_gather_matmul_v2", "matmul_reduce_scatter", "pure_matmul"]
    assert {dispatch_path(n) for n in names} == {"composite"}


def test_single_process_coc_ops_write_into_output_and_transpose_a_mismatched_weight() -> None:
    x, w, b = data()
    ref = x.astype(np.float64) @ w + b
    for fn in (matmul_all_reduce, all_gather_matmul, matmul_reduce_scatter, pure_matmul):
        out = Tensor(np.zeros((M, N), np.float32))
        returned = fn(None, Tensor(x), Tensor(np.ascontiguousarray(w.T)), out, Tensor(b))
        assert returned is out
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5, err_msg=fn.__name__)
    out, comm = Tensor(np.zeros((M, N), np.float32)), Tensor(np.zeros((M, K), np.float32))
    res = all_gather_matmul_v2(None, Tensor(x), Tensor(w), out, comm)
    assert res[0] is out
    assert res[1] is comm
    np.testing.assert_allclose(comm.asnumpy(), x)
    np.testing.assert_allclose(out.asnumpy(), x.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)


def test_coc_ops_reject_shapes_that_do_not_fit_naming_the_argument() -> None:
    x, w, b = data()
    with pytest.raises(ValueError, match=r"matmul_all_reduce: argument 'input2'.*\(6, n\) or \(n, 6\)"):
        matmul_all_reduce(None, Tensor(x), Tensor(np.ones((5, 5), np.float32)), Tensor(np.zeros((M, N), np.float32)))
    with pytest.raises(ValueError, match=r"all_gather_matmul: argument 'output'.*\(4, 3\)"):
        all_gather_matmul(None, Tensor(x), Tensor(w), Tensor(np.zeros((M, N + 1), np.float32)))
    with pytest.raises(ValueError, match=r"pure_matmul: argument 'bias'.*\(3,\)"):
        pure_matmul(None, Tensor(x), Tensor(w), Tensor(np.zeros((M, N), np.float32)), Tensor(b[:2]))
    with pytest.raises(TypeError, match="matmul_reduce_scatter: argument 'input1'"):
        matmul_reduce_scatter(None, x, Tensor(w), Tensor(np.zeros((M, N), np.float32)))  # type: ignore[arg-type]


def test_an_explicit_group_without_initialised_communication_is_an_error() -> None:
    x, w, _ = data()
    with pytest.raises(ValueError, match="matmul_all_reduce: argument 'group'.*communication.init"):
        matmul_all_reduce(None, Tensor(x), Tensor(w), Tensor(np.zeros((M, N), np.float32)), group="hccl_world_group")
