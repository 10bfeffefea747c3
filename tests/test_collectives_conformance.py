"""torch.distributed on our backend against real PyTorch's gloo, case by case (issue 19's collectives).

tests/compat_workers/collectives_conformance.py runs the same ~350 cases (every collective megatron-core
0.12.1, MindSpeed and MindSpeed-LLM call; every dtype they send; owned outputs and views of a larger
buffer; sync and async) on 2 msrun workers with the adaptor's built-in patches, and on 2 torchrun
workers with the reference interpreter's PyTorch and gloo: one launch per side. For every case and
rank the caller must see the same thing: the same values (exactly: the inputs make sums and averages
exact in every dtype), dtype, shape, base buffer after the op — or, where PyTorch raises, an error too.
Where MindSpore cannot do what PyTorch does, our backend must raise one of our typed errors
(``LOUD``: listed with the reason), never give a different result.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _helpers import free_port, msrun_command, reference_python, subprocess_env

WORKER = Path(__file__).parent / "compat_workers" / "collectives_conformance.py"

#: Cases where PyTorch gives a result and our backend raises a typed error instead (prefix -> why).
LOUD: dict[str, str] = {}


def _read(out_dir: Path, logs: str) -> dict[int, dict[str, Any]]:
    files = sorted(out_dir.glob("rank*.json"))
    assert len(files) == 2, f"the workers wrote {[path.name for path in files]}:\n{logs[-6000:]}"
    return {int(path.stem[len("rank"):]): json.loads(path.read_text()) for path in files}


def _without_info(log: str) -> str:
    return "\n".join(line for line in log.splitlines() if not line.startswith(("[INFO]", "[WARNING]")))


def _run_mindspore(out_dir: Path, log_dir: Path) -> dict[int, dict[str, Any]]:
    done = subprocess.run(msrun_command(WORKER, "mindspore", str(out_dir), workers=2, log_dir=log_dir),
                          env=subprocess_env(bin_first=True), capture_output=True, text=True, timeout=600)
    logs = "\n".join(f"--- {path.name}\n{_without_info(path.read_text(errors='replace'))[-3000:]}"
                     for path in sorted(log_dir.glob("worker_*.log")))
    assert done.returncode == 0, logs
    return _read(out_dir, logs)


def _run_pytorch(out_dir: Path) -> dict[int, dict[str, Any]]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([reference_python(), "-m", "torch.distributed.run", "--nproc_per_node=2",
                           f"--master_port={free_port()}", str(WORKER), "pytorch", str(out_dir)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return _read(out_dir, done.stderr)


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    root = tmp_path_factory.mktemp("collectives_conformance")
    reference = _run_pytorch(root / "pytorch")
    ours = _run_mindspore(root / "mindspore", root / "msrun_logs")
    return ours, reference


def classify(name: str, ours: dict[str, Any], reference: dict[str, Any]) -> tuple[str, str]:
    """Return ``(verdict, detail)`` of one case on one rank: conformant, loud, or divergent."""
    if "error" in reference:
        if "error" in ours:
            return "conformant", f"both raise ({reference['error']} / {ours['error']})"
        return "divergent", f"PyTorch raises {reference['error']}: {reference['message'][:200]}; ours gave " \
                            f"{json.dumps(ours['result'])[:300]}"
    if "error" in ours:
        reason = next((why for prefix, why in LOUD.items() if name.startswith(prefix)), None)
        if ours.get("typed") and reason is not None:
            return "loud", reason
        return "divergent", f"ours raises {ours['error']}: {ours['message'][:300]}"
    if ours["result"] != reference["result"]:
        return "divergent", f"ours {json.dumps(ours['result'])[:400]} != PyTorch " \
                            f"{json.dumps(reference['result'])[:400]}"
    return "conformant", ""


def verdicts(ours: dict[int, dict[str, Any]], reference: dict[int, dict[str, Any]]) -> dict[str, dict[int, tuple]]:
    """Every case's verdict per rank."""
    return {name: {rank: classify(name, ours[rank][name], reference[rank][name]) for rank in reference}
            for name in reference[0]}


#: Case-name prefixes: one test per collective (and per reduce op of all_reduce).
FAMILIES = ("all_reduce/SUM", "all_reduce/MAX", "all_reduce/MIN", "all_reduce/AVG", "broadcast/", "reduce/",
            "all_gather/", "all_gather_into_tensor", "_all_gather_base", "reduce_scatter_tensor",
            "_reduce_scatter_base", "reduce_scatter/", "all_to_all_single", "all_to_all/", "gather/", "scatter/",
            "send_recv", "isend_irecv", "batch_isend_irecv", "barrier", "all_gather_object", "broadcast_object_list",
            "gather_object", "new_group", "timers/")


def test_both_sides_ran_the_same_cases(sides: tuple[dict, dict]) -> None:
    ours, reference = sides
    for rank in (0, 1):
        assert sorted(ours[rank]) == sorted(reference[rank])
    assert len(reference[0]) > 300
    assert {name for name in reference[0] if not name.startswith(FAMILIES)} == set()


@pytest.mark.parametrize("family", FAMILIES)
def test_collective_gives_what_pytorch_gives_or_a_typed_error(sides: tuple[dict, dict], family: str) -> None:
    ours, reference = sides
    cases = {name: verdict for name, verdict in verdicts(ours, reference).items() if name.startswith(family)}
    assert cases, family
    divergent = [f"{name} rank {rank}: {detail}" for name, per_rank in cases.items()
                 for rank, (verdict, detail) in per_rank.items() if verdict == "divergent"]
    assert divergent == [], "\n".join(divergent)


def test_average_of_integers_raises_our_typed_error_where_pytorch_raises(sides: tuple[dict, dict]) -> None:
    ours, reference = sides
    names = [name for name in reference[0] if name.startswith("all_reduce/AVG/int64")]
    assert names
    for name in names:
        for rank in (0, 1):
            assert "can't be cast" in reference[rank][name]["message"]
            assert ours[rank][name]["typed"], ours[rank][name]
            assert ours[rank][name]["error"] == "CollectiveError", ours[rank][name]
