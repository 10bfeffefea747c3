"""mindspeed_ms.compat.cpu_collectives and the bucket/p2p replacements of compat.megatron_parallel, on two real
msrun CPU workers (tests/compat_workers/cpu_collectives.py): each gives every rank what PyTorch gives it.

One launch (~15-40 s) for all cases: all_gather_into_tensor into a view of a bigger buffer,
reduce_scatter_tensor, all_to_all_single with unequal splits (async handle), the object collectives
(all_gather_object, gather_object, broadcast_object_list), megatron's bucket-group
grad sync (scaled all-reduce written back through the bucket view into main_grad) and param sync
(all-gather of the shards into the parameter buffer), and the pipeline's send/recv exchange.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import msrun_command, subprocess_env, worker_logs

WORKER = Path(__file__).parent / "compat_workers" / "cpu_collectives.py"


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    log_dir = tmp_path_factory.mktemp("collectives")
    done = subprocess.run(msrun_command(WORKER, workers=2, log_dir=log_dir), env=subprocess_env(bin_first=True),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, worker_logs(log_dir)
    logs = {path.name: path.read_text(errors="replace") for path in sorted(log_dir.glob("worker_*.log"))}
    results = {}
    for text in logs.values():
        for line in text.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
                results[result["rank"]] = result
    assert sorted(results) == [0, 1]
    return results


def test_all_gather_into_tensor_fills_a_view_of_a_buffer_in_rank_order(ranks: dict) -> None:
    expected = [0.0, *range(4), *range(10, 14), 0.0]
    for rank in ranks.values():
        assert rank["all_gather_into_tensor"] == expected


def test_all_gather_into_tensor_of_booleans_keeps_the_dtype(ranks: dict) -> None:
    expected = [True, False, False, False, False, True, False, False]
    for rank in ranks.values():
        assert rank["all_gather_bool"][1] == expected
        assert rank["all_gather_bool"][0].lower() == "bool"


def test_list_all_gather_of_unequal_sizes_fills_views_of_one_tensor(ranks: dict) -> None:
    for rank in ranks.values():
        assert rank["all_gather_unequal_views"] == [[1.0, 1.0]] * 2 + [[2.0, 2.0]] * 3


def test_list_all_gather_of_unequal_int64_sizes_keeps_the_high_bits(ranks: dict) -> None:
    # gloo refuses unequal sizes (no PyTorch reference on CPU); NCCL gathers them, megatron relies on it
    expected = [2 ** 40, 2 ** 40 + 1, 2 ** 40 + 7, 2 ** 40 + 8, 2 ** 40 + 9]
    for rank in ranks.values():
        assert rank["all_gather_unequal_int64"] == expected


def test_list_reduce_scatter_of_unequal_blocks_gives_each_rank_its_sum(ranks: dict) -> None:
    assert ranks[0]["reduce_scatter_list"] == [3.0, 3.0]
    assert ranks[1]["reduce_scatter_list"] == [30.0, 30.0, 30.0]


def test_reduce_scatter_tensor_gives_each_rank_its_block_of_the_sum(ranks: dict) -> None:
    total = np.arange(6) * 1 + np.arange(6) * 2
    assert ranks[0]["reduce_scatter_tensor"] == total[:3].tolist()
    assert ranks[1]["reduce_scatter_tensor"] == total[3:].tolist()


def test_all_to_all_single_with_unequal_splits_delivers_each_block_to_its_rank(ranks: dict) -> None:
    rows = {0: np.arange(6).reshape(3, 2), 1: np.arange(8).reshape(4, 2) + 100}
    sends = {0: [1, 2], 1: [2, 2]}
    for me in (0, 1):
        blocks = []
        for source in (0, 1):
            start = sum(sends[source][:me])
            blocks.append(rows[source][start:start + sends[source][me]])
        assert ranks[me]["all_to_all_single"] == np.concatenate(blocks).tolist()


def test_object_collectives_exchange_payloads_of_different_sizes(ranks: dict) -> None:
    for rank in ranks.values():
        assert rank["all_gather_object"] == [[0, 1], [1, 51]]
        assert rank["broadcast_object_list"] == ["plan of rank 1", 10]
    assert ranks[0]["gather_object"] == [["from", 0], ["from", 1]]
    assert ranks[1]["gather_object"] is None


def test_bucket_grad_sync_scales_sums_and_writes_back_into_main_grad_views(ranks: dict) -> None:
    for rank in ranks.values():
        assert rank["bucket_grad_sync"] == [[1.5, 1.5], [1.5, 1.5]]  # 0.5 * (1 + 2)


def test_bucket_sync_with_overlap_returns_finished_handles_megatron_waits_on(ranks: dict) -> None:
    for rank in ranks.values():
        assert rank["bucket_handles"] == ["NoneType", "NoneType", "CompletedWork", "CompletedWork"]
        assert rank["bucket_grad_sync_again"] == [[1.5, 1.5], [1.5, 1.5]]  # 0.5 * (1.5 + 1.5)


def test_bucket_param_sync_gathers_every_shard_into_the_parameter_buffer(ranks: dict) -> None:
    for rank in ranks.values():
        assert rank["bucket_param_sync"] == [5.0] * 4 + [6.0] * 4


def test_pipeline_p2p_exchange_with_blocking_send_recv(ranks: dict) -> None:
    assert ranks[0]["p2p"] == [[-1.0] * 3] * 2  # stage 0 received the gradient from stage 1
    assert ranks[1]["p2p"] == [[7.0] * 3] * 2  # stage 1 received the activation from stage 0


def test_all_reduce_into_any_kind_of_view_reaches_the_base(ranks: dict) -> None:
    summed = (np.arange(6) * 3.0).tolist()
    for rank, result in ranks.items():
        views = result["into_views"]
        own = (np.arange(6) * (rank + 1.0)).tolist()
        assert views["slice"] == own[:2] + summed[2:4] + own[4:]
        for kind in ("full_slice", "reshape", "transpose", "owner"):
            assert views[kind] == summed, kind
        assert views["async"] == [rank + 1.0, 3.0, 3.0, rank + 1.0]


def test_broadcast_and_recv_into_a_view_reach_the_base(ranks: dict) -> None:
    assert ranks[0]["into_views"]["broadcast"] == [1.0] * 4
    assert ranks[1]["into_views"]["broadcast"] == [2.0, 1.0, 1.0, 2.0]
    assert ranks[1]["into_views"]["recv"] == [0.0, 0.0, 7.0, 8.0]
