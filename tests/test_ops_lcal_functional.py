"""CoC ops (lcal_functional): single process here; across 2 and 1 msrun workers via ops_workers/coc_worker.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from _helpers import msrun_command, subprocess_env, worker_logs
from mindspore import Tensor

from mindspeed_ms.ops import (
    all_gather_matmul,
    all_gather_matmul_v2,
    matmul_all_reduce,
    matmul_reduce_scatter,
    pure_matmul,
)

WORKER = Path(__file__).parent / "ops_workers" / "coc_worker.py"


def run_msrun(tmp_path: Path, workers: int, mode: str) -> str:
    log_dir = tmp_path / f"msrun_{workers}_{mode}"
    proc = subprocess.run(msrun_command(WORKER, mode, workers=workers, log_dir=log_dir), capture_output=True,
                          text=True, timeout=240, env=subprocess_env(bin_first=True), cwd=tmp_path)
    logs = worker_logs(log_dir, tail=6000)
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
