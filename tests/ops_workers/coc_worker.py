"""msrun worker: check the five CoC ops of mindspeed_ms.ops.lcal_functional across real processes.

Usage under msrun: ``coc_worker.py mindspore`` (MindSpore's own ``communication.init()``; the default
group is the world) or ``coc_worker.py megatron`` (MSAdapter's ``init_process_group("gloo")`` and
megatron-core's ``initialize_model_parallel(1, 1)``: the default group is megatron's tensor-parallel
group of one rank, and an explicit ``group=`` must win). Every rank draws the data of all ranks from
one seed and checks its result against a single-process NumPy reference. Prints one line per check;
exits 1 if any check failed.
"""

from __future__ import annotations

import sys

import numpy as np

MODE = sys.argv[1] if len(sys.argv) > 1 else "mindspore"

if MODE == "megatron":
    import msadapter  # noqa: F401 - must precede `import torch` to get MSAdapter's torch
    import torch

    # msadapter ships a transformer_engine shim that makes megatron believe TE is installed.
    sys.modules["transformer_engine"] = None  # type: ignore[assignment]
    torch.distributed.init_process_group(backend="gloo")
    from megatron.core import parallel_state

    parallel_state.initialize_model_parallel(1, 1)
else:
    from mindspore.communication import init

    init()

import mindspore  # noqa: E402
from mindspore import Tensor  # noqa: E402
from mindspore.communication import GlobalComm, get_group_size, get_rank  # noqa: E402

from mindspeed_ms import ops  # noqa: E402
from mindspeed_ms.ops.comm import resolve_group  # noqa: E402

RANK, SIZE = get_rank(), get_group_size()
M, K, N = 4, 6, 5
rng = np.random.default_rng(20240601)
X = rng.standard_normal((SIZE, M, K)).astype(np.float32)
W = rng.standard_normal((SIZE, K, N)).astype(np.float32)
BIAS = rng.standard_normal(N).astype(np.float32)
SUMMED = sum(X[r].astype(np.float64) @ W[r] for r in range(SIZE))
GATHERED = X.reshape(SIZE * M, K)
failures: list[str] = []


def check(name: str, got: Tensor, ref: np.ndarray, tol: float = 1e-5) -> None:
    value = got.astype(mindspore.float32).asnumpy()
    ok = value.shape == ref.shape and np.allclose(value, ref, rtol=tol, atol=tol)
    print(f"rank {RANK}/{SIZE} [{MODE}] {name}: {'ok' if ok else 'MISMATCH'}", flush=True)
    if not ok:
        failures.append(f"{name}: got {value.tolist()} expected {ref.tolist()}")


def zeros(*shape: int, dtype: type = np.float32) -> Tensor:
    return Tensor(np.zeros(shape, dtype))


def run_all(kw: dict) -> None:
    x, w_t = Tensor(X[RANK]), Tensor(np.ascontiguousarray(W[RANK].T))
    out = ops.matmul_all_reduce(None, x, w_t, zeros(M, N), Tensor(BIAS), **kw)  # weight given as (n, k)
    check("matmul_all_reduce", out, SUMMED + BIAS)
    out = ops.all_gather_matmul(None, x, Tensor(W[0]), zeros(M * SIZE, N), Tensor(BIAS), **kw)
    check("all_gather_matmul", out, GATHERED @ W[0].astype(np.float64) + BIAS)
    out, comm = ops.all_gather_matmul_v2(None, x, Tensor(W[0]), zeros(M * SIZE, N), zeros(M * SIZE, K), **kw)
    check("all_gather_matmul_v2 output", out, GATHERED @ W[0].astype(np.float64))
    check("all_gather_matmul_v2 comm_output", comm, GATHERED)
    rows = slice(RANK * M // SIZE, (RANK + 1) * M // SIZE)
    out = ops.matmul_reduce_scatter(None, x, Tensor(W[RANK]), zeros(M // SIZE, N), Tensor(BIAS), **kw)
    check("matmul_reduce_scatter", out, SUMMED[rows] + BIAS)
    out = ops.pure_matmul(None, x, w_t, zeros(M, N), Tensor(BIAS))
    check("pure_matmul", out, X[RANK].astype(np.float64) @ W[RANK] + BIAS)
    half = ops.matmul_all_reduce(
        None,
        x.astype(mindspore.float16),
        Tensor(W[RANK]).astype(mindspore.float16),
        zeros(M, N, dtype=np.float16),
        **kw,
    )
    x16 = X.astype(np.float16).astype(np.float64)
    w16 = W.astype(np.float16).astype(np.float64)
    check("matmul_all_reduce float16", half, sum(x16[r] @ w16[r] for r in range(SIZE)), tol=2e-2)


if MODE == "megatron":
    tp = resolve_group("worker")
    print(f"rank {RANK}: default group resolves to size {tp.size}", flush=True)
    if tp.size != 1:
        failures.append(f"megatron tp group of size 1 expected, resolved {tp}")
    # The default group is megatron's tensor-parallel group of one rank: no cross-rank sum.
    local = ops.matmul_all_reduce(None, Tensor(X[RANK]), Tensor(W[RANK]), zeros(M, N))
    check("matmul_all_reduce on megatron's tp group", local, X[RANK].astype(np.float64) @ W[RANK])
    # An explicit group wins, as a name or as MSAdapter's ProcessGroup; inputs as MSAdapter tensors.
    run_all({"group": GlobalComm.WORLD_COMM_GROUP})
    out = ops.matmul_all_reduce(
        None,
        torch.from_numpy(X[RANK]),
        torch.from_numpy(W[RANK]),
        torch.zeros(M, N),
        group=torch.distributed.group.WORLD,
    )
    check("matmul_all_reduce with a ProcessGroup and MSAdapter tensors", out, SUMMED)
else:
    run_all({})
    run_all({"group": GlobalComm.WORLD_COMM_GROUP})

if failures:
    print(f"rank {RANK}: {len(failures)} FAILED:\n" + "\n".join(failures), flush=True)
    sys.exit(1)
print(f"rank {RANK}: ALL PASSED", flush=True)
