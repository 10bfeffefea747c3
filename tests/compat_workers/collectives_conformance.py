"""One worker of the collectives' differential run: the same cases on MindSpore (msrun) and on PyTorch (torchrun).

``python collectives_conformance.py SIDE OUT_DIR`` with SIDE ``mindspore`` (under msrun, the adaptor's
built-in patches applied first, as ``mindspeed-ms run`` does) or ``pytorch`` (under torchrun with real
PyTorch and gloo). Every case runs the ``torch.distributed`` call as megatron-core 0.12.1, MindSpeed
and MindSpeed-LLM make it, on 2 workers, and records per rank what the caller sees afterwards: the
result tensors (dtype, shape, values), the base buffer when the output is a view of one, or the
error. Each rank writes ``OUT_DIR/rank<N>.json``; tests/test_collectives_conformance.py compares the
two sides case by case.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

SIDE, OUT_DIR = sys.argv[1], Path(sys.argv[2])
if SIDE == "mindspore":
    from mindspeed_ms.adaptation import execute_mindspore

    execute_mindspore()

# isort: split
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group(backend="gloo")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
PEER = 1 - RANK

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64, "bool": torch.bool}
FLOATS = ("float32", "float64", "float16", "bfloat16")
BIG = 2 ** 40

results: dict[str, Any] = {}
logger = logging.getLogger("collectives_conformance")
if os.environ.get("COLLECTIVES_TRACE"):  # name each case in the worker's log (to find where ranks fell apart)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)


def _dtype_name(dtype: Any) -> str:
    for name, value in DTYPES.items():
        if dtype == value:
            return name
    return str(dtype)


def encode(tensor: Any) -> Any:
    """What a caller can read of ``tensor``: dtype, shape and exact values (None stays None)."""
    if tensor is None:
        return None
    if isinstance(tensor, (list, tuple)):
        return [encode(item) for item in tensor]
    name = _dtype_name(tensor.dtype)
    readable = tensor.detach()
    if name in ("float16", "bfloat16"):
        readable = readable.to(torch.float32)
    return {"dtype": name, "shape": [int(size) for size in tensor.shape], "values": readable.tolist()}


def values(dtype: str, count: int, rank: int, salt: int = 0) -> Any:
    """``count`` values of ``dtype`` that differ by rank and salt; sums and averages of two are exact."""
    index = torch.arange(count, dtype=torch.float32)
    if dtype == "bool":
        pattern = [(i * (rank + 1) + salt) % 3 == 0 for i in range(count)]
        return torch.tensor(pattern, dtype=torch.bool)
    if dtype == "int64":
        sign = [1 if (i + salt) % 2 == 0 else -1 for i in range(count)]
        return torch.tensor([s * (BIG + 7 * rank + 1000 * salt + i) for i, s in enumerate(sign)], dtype=torch.int64)
    if dtype == "int32":
        return (index * 3 - 4 + 100 * rank + 10 * salt).to(torch.int32)
    return (index * 0.5 + 8 * rank + salt + 1).to(DTYPES[dtype])


def sentinel(dtype: str, count: int) -> Any:
    """A buffer of ``count`` values no collective of these cases produces (detects writes past a view)."""
    if dtype == "bool":
        return torch.tensor([True] * count, dtype=torch.bool)
    # through float32: torch.full/zeros of bfloat16 have no CPU kernel under MSAdapter (not a collective's gap)
    return torch.full((count,), -3.0 - RANK, dtype=torch.float32).to(DTYPES[dtype])


def run(name: str, body: Callable[..., Any], *args: Any) -> None:
    """Run ``body(*args)`` as case ``name`` and record what it gave on this rank, or its error."""
    logger.info("case %s", name)
    try:
        results[name] = {"result": body(*args)}
    except Exception as exc:  # noqa: BLE001  (every error is a result to compare)
        from_adaptor = any(cls.__module__.startswith("mindspeed_ms") for cls in type(exc).__mro__)
        results[name] = {"error": type(exc).__name__, "message": str(exc)[:400], "typed": from_adaptor}


def target(kind: str, dtype: str, count: int) -> tuple[Any, Any]:
    """A tensor of ``count`` elements to write into, and the buffer it lives in: itself or a larger base."""
    if kind == "owned":
        own = sentinel(dtype, count)
        return own, own
    base = sentinel(dtype, count + 4)
    if kind == "slice":
        return base[2:2 + count], base
    if kind == "narrow":
        return base.narrow(0, 1, count), base
    if kind == "view":  # a full-size view (megatron's grad buffer: main_grad = buffer[...].view(shape))
        base = sentinel(dtype, count)
        return base.view(2, count // 2), base
    if kind == "transpose":  # non-contiguous
        base = sentinel(dtype, count)
        return base.view(2, count // 2).t(), base
    raise ValueError(kind)


def finish(work: Any, is_async: bool) -> str:
    """Wait on an async handle (as megatron does) and say what kind of handle came back."""
    if is_async:
        if work is None:
            return "no handle"
        work.wait()
        return "waited"
    return "none" if work is None else "handle"


def fill(into: Any, source: Any) -> None:
    """Initial contents of a target (the input of in-place collectives), written through views."""
    with torch.no_grad():
        into.copy_(source.reshape(tuple(into.shape)))


ALL_DTYPES = tuple(DTYPES)
SYNC = (False, True)
TARGETS = ("owned", "slice", "view", "narrow")


def op_of(name: str) -> Any:
    return getattr(dist.ReduceOp, name)


# --- all_reduce: in place; every dtype, every kind of target, sync and async -------------------------------------
def all_reduce_case(dtype: str, kind: str, op: str, is_async: bool) -> Any:
    tensor, base = target(kind, dtype, 4)
    fill(tensor, values(dtype, 4, RANK))
    work = dist.all_reduce(tensor, op=op_of(op), async_op=is_async)
    return {"handle": finish(work, is_async), "tensor": encode(tensor), "base": encode(base)}


for dtype in ALL_DTYPES:
    for kind in TARGETS:
        for is_async in SYNC:
            run(f"all_reduce/SUM/{dtype}/{kind}/{'async' if is_async else 'sync'}",
                all_reduce_case, dtype, kind, "SUM", is_async)
for op in ("MAX", "MIN"):
    for dtype in ALL_DTYPES:
        for kind in ("owned", "slice"):
            run(f"all_reduce/{op}/{dtype}/{kind}/sync", all_reduce_case, dtype, kind, op, False)
for dtype in ("float32", "float64", "float16", "bfloat16", "int64"):
    for kind in ("owned", "slice"):
        for is_async in SYNC:
            run(f"all_reduce/AVG/{dtype}/{kind}/{'async' if is_async else 'sync'}",
                all_reduce_case, dtype, kind, "AVG", is_async)
run("all_reduce/SUM/float32/transpose/sync", all_reduce_case, "float32", "transpose", "SUM", False)


# --- broadcast: in place -------------------------------------------------------------------------------------------
def broadcast_case(dtype: str, kind: str, src: int, is_async: bool) -> Any:
    tensor, base = target(kind, dtype, 4)
    fill(tensor, values(dtype, 4, RANK))
    work = dist.broadcast(tensor, src=src, async_op=is_async)
    return {"handle": finish(work, is_async), "tensor": encode(tensor), "base": encode(base)}


for dtype in ALL_DTYPES:
    for kind in TARGETS:
        for is_async in SYNC:
            run(f"broadcast/{dtype}/{kind}/{'async' if is_async else 'sync'}",
                broadcast_case, dtype, kind, 1 if kind == "slice" else 0, is_async)
run("broadcast/float32/transpose/sync", broadcast_case, "float32", "transpose", 1, False)


# --- reduce (MindSpeed's MoE gate): in place on dst ----------------------------------------------------------------
def reduce_case(dtype: str, kind: str) -> Any:
    tensor, base = target(kind, dtype, 4)
    fill(tensor, values(dtype, 4, RANK))
    dist.reduce(tensor, dst=0, op=dist.ReduceOp.SUM)
    return {"tensor": encode(tensor) if RANK == 0 else None, "base": encode(base) if RANK == 0 else None}


for dtype in ("float32", "float64", "int64", "bool"):
    for kind in ("owned", "slice"):
        run(f"reduce/{dtype}/{kind}/sync", reduce_case, dtype, kind)


# --- all_gather (list): into owned tensors and into views of one buffer ----------------------------------------------
def all_gather_list_case(dtype: str, kind: str, is_async: bool) -> Any:
    if kind == "owned":
        outputs = [sentinel(dtype, 4) for _ in range(WORLD)]
        base = None
    else:  # megatron: list(torch.split(buffer, ...)) / chunk of one tensor
        base = sentinel(dtype, 4 * WORLD + 2)
        outputs = [base[1 + 4 * i:1 + 4 * (i + 1)] for i in range(WORLD)]
    work = dist.all_gather(outputs, values(dtype, 4, RANK), async_op=is_async)
    return {"handle": finish(work, is_async), "outputs": encode(outputs), "base": encode(base)}


for dtype in ALL_DTYPES:
    for kind in ("owned", "views"):
        for is_async in SYNC:
            run(f"all_gather/{dtype}/{kind}/{'async' if is_async else 'sync'}",
                all_gather_list_case, dtype, kind, is_async)


# --- all_gather_into_tensor / _all_gather_base ---------------------------------------------------------------------
def all_gather_tensor_case(function: str, dtype: str, kind: str, is_async: bool) -> Any:
    output, base = target(kind if kind != "view" else "slice", dtype, 4 * WORLD)
    work = getattr(dist, function)(output, values(dtype, 4, RANK), async_op=is_async)
    return {"handle": finish(work, is_async), "output": encode(output), "base": encode(base)}


for dtype in ALL_DTYPES:
    for kind in ("owned", "view"):
        for is_async in SYNC:
            run(f"all_gather_into_tensor/{dtype}/{kind}/{'async' if is_async else 'sync'}",
                all_gather_tensor_case, "all_gather_into_tensor", dtype, kind, is_async)
for dtype in ("float32", "bfloat16", "int64"):
    for kind in ("owned", "view"):
        run(f"_all_gather_base/{dtype}/{kind}/async", all_gather_tensor_case, "_all_gather_base", dtype, kind,
                                                                                    True)


# --- reduce_scatter_tensor / _reduce_scatter_base ------------------------------------------------------------------
def reduce_scatter_tensor_case(function: str, dtype: str, kind: str, op: str, is_async: bool) -> Any:
    output, base = target(kind, dtype, 4)
    source = values(dtype, 4 * WORLD, RANK)
    work = getattr(dist, function)(output, source, op=op_of(op), async_op=is_async)
    return {"handle": finish(work, is_async), "output": encode(output), "base": encode(base)}


for dtype in ALL_DTYPES:
    for kind in ("owned", "slice"):
        for is_async in SYNC:
            run(f"reduce_scatter_tensor/SUM/{dtype}/{kind}/{'async' if is_async else 'sync'}",
                reduce_scatter_tensor_case, "reduce_scatter_tensor", dtype, kind, "SUM", is_async)
for op in ("MAX", "AVG"):
    for dtype in ("float32", "bfloat16"):
        run(f"reduce_scatter_tensor/{op}/{dtype}/owned/sync",
            reduce_scatter_tensor_case, "reduce_scatter_tensor", dtype, "owned", op, False)
for dtype in ("float32", "int64"):
    run(f"_reduce_scatter_base/SUM/{dtype}/slice/async",
        reduce_scatter_tensor_case, "_reduce_scatter_base", dtype, "slice", "SUM", True)


# --- reduce_scatter (list) -----------------------------------------------------------------------------------------
def reduce_scatter_list_case(dtype: str, kind: str, is_async: bool) -> Any:
    output, base = target(kind, dtype, 4)
    inputs = [values(dtype, 4, RANK, salt=i) for i in range(WORLD)]
    work = dist.reduce_scatter(output, inputs, async_op=is_async)
    return {"handle": finish(work, is_async), "output": encode(output), "base": encode(base)}


for dtype in ("float32", "float64", "bfloat16", "int32", "int64", "bool"):
    for kind in ("owned", "slice"):
        run(f"reduce_scatter/{dtype}/{kind}/sync", reduce_scatter_list_case, dtype, kind, False)
run("reduce_scatter/float32/owned/async", reduce_scatter_list_case, "float32", "owned", True)


# --- all_to_all_single (equal and unequal splits) and all_to_all (list) ---------------------------------------------
def all_to_all_single_case(dtype: str, kind: str, unequal: bool, is_async: bool) -> Any:
    if unequal:  # rank r sends r + 1 rows to rank 0 and 2 rows to rank 1 (the MoE dispatcher's splits)
        send = [RANK + 1, 2]
        receive = [source + 1 for source in range(WORLD)] if RANK == 0 else [2] * WORLD
    else:
        send = receive = [2] * WORLD
    rows = values(dtype, sum(send) * 2, RANK).reshape(sum(send), 2)
    output, base = target(kind, dtype, sum(receive) * 2)
    output = output.view(sum(receive), 2)
    work = dist.all_to_all_single(output, rows, output_split_sizes=receive if unequal else None,
                                  input_split_sizes=send if unequal else None, async_op=is_async)
    return {"handle": finish(work, is_async), "output": encode(output), "base": encode(base)}


for dtype in ALL_DTYPES:
    for unequal in (False, True):
        run(f"all_to_all_single/{'unequal' if unequal else 'equal'}/{dtype}/owned/sync",
            all_to_all_single_case, dtype, "owned", unequal, False)
for dtype in ("float32", "int64"):
    for unequal in (False, True):
        run(f"all_to_all_single/{'unequal' if unequal else 'equal'}/{dtype}/slice/async",
            all_to_all_single_case, dtype, "slice", unequal, True)


def all_to_all_list_case(dtype: str, is_async: bool) -> Any:
    outputs = [sentinel(dtype, 3) for _ in range(WORLD)]  # gloo takes equal sizes only
    inputs = [values(dtype, 3, RANK, salt=i) for i in range(WORLD)]
    work = dist.all_to_all(outputs, inputs, async_op=is_async)
    return {"handle": finish(work, is_async), "outputs": encode(outputs)}


for dtype in ("float32", "bfloat16", "int64", "bool"):
    run(f"all_to_all/{dtype}/owned/sync", all_to_all_list_case, dtype, False)
run("all_to_all/float32/owned/async", all_to_all_list_case, "float32", True)


# --- gather / scatter (the distributed optimizer's checkpoint) -----------------------------------------------------
def gather_case(dtype: str, dst: int) -> Any:
    outputs = [sentinel(dtype, 4) for _ in range(WORLD)] if RANK == dst else None
    dist.gather(values(dtype, 4, RANK), outputs, dst=dst)
    return {"outputs": encode(outputs)}


def scatter_case(dtype: str, kind: str, src: int) -> Any:
    output, base = target(kind, dtype, 4)
    inputs = [values(dtype, 4, RANK, salt=i) for i in range(WORLD)] if RANK == src else None
    dist.scatter(output, inputs, src=src)
    return {"output": encode(output), "base": encode(base)}


for dtype in ("float32", "float64", "bfloat16", "int64"):
    run(f"gather/{dtype}/owned/sync", gather_case, dtype, 1 if dtype == "int64" else 0)
    for kind in ("owned", "slice"):
        run(f"scatter/{dtype}/{kind}/sync", scatter_case, dtype, kind, 0 if kind == "owned" else 1)


# --- point to point: send/recv, isend/irecv, batch_isend_irecv -----------------------------------------------------
def send_recv_case(dtype: str, kind: str) -> Any:
    received, base = target(kind, dtype, 4)
    if RANK == 0:
        dist.send(values(dtype, 4, RANK), dst=1)
        dist.recv(received, src=1)
    else:
        dist.recv(received, src=0)
        dist.send(values(dtype, 4, RANK), dst=0)
    return {"received": encode(received), "base": encode(base)}


def isend_irecv_case(dtype: str, kind: str) -> Any:
    received, base = target(kind, dtype, 4)
    outgoing = values(dtype, 4, RANK)
    if RANK == 0:
        works = [dist.isend(outgoing, dst=1), dist.irecv(received, src=1)]
    else:
        works = [dist.irecv(received, src=0), dist.isend(outgoing, dst=0)]
    for work in works:
        work.wait()
    return {"received": encode(received), "base": encode(base)}


def batch_isend_irecv_case(dtype: str, kind: str) -> Any:
    received, base = target(kind, dtype, 4)
    outgoing = values(dtype, 4, RANK)
    operations = [dist.P2POp(dist.isend, outgoing, PEER), dist.P2POp(dist.irecv, received, PEER)]
    if RANK == 1:  # megatron orders them by stage parity
        operations.reverse()
    works = dist.batch_isend_irecv(operations)
    for work in works:
        work.wait()
    return {"received": encode(received), "base": encode(base), "handles": len(works)}


for dtype in ALL_DTYPES:
    for kind in ("owned", "slice"):
        run(f"send_recv/{dtype}/{kind}/sync", send_recv_case, dtype, kind)
for dtype in ("float32", "bfloat16", "int64", "bool"):
    for kind in ("owned", "view"):
        run(f"isend_irecv/{dtype}/{kind}/async", isend_irecv_case, dtype, kind)
        run(f"batch_isend_irecv/{dtype}/{kind}/async", batch_isend_irecv_case, dtype, kind)

run("barrier/-/-/sync", lambda: {"handle": finish(dist.barrier(), False)})
run("barrier/-/-/async", lambda: {"handle": finish(dist.barrier(async_op=True), True)})


# --- object collectives --------------------------------------------------------------------------------------------
def object_case(kind: str, group: Any = None) -> Any:
    payload = {"rank": RANK, "names": ["layer"] * (RANK * 40 + 1), "shape": (RANK, 2 ** 40)}
    if kind == "all_gather_object":
        gathered: list[Any] = [None] * dist.get_world_size(group)
        dist.all_gather_object(gathered, payload, group=group)
        return repr(gathered)
    if kind == "broadcast_object_list":
        announced: list[Any] = [f"plan of rank {RANK}", RANK * 10, None]
        dist.broadcast_object_list(announced, src=1, group=group)
        return repr(announced)
    collected = [None] * dist.get_world_size(group) if RANK == 0 else None
    dist.gather_object(payload, collected, dst=0, group=group)
    return repr(collected)


for kind in ("all_gather_object", "broadcast_object_list", "gather_object"):
    run(f"{kind}/object/-/sync", object_case, kind)


# --- groups: new_group subgroups, ranks and sizes, collectives on them ------------------------------------------------
pair = dist.new_group([1, 0])
singles = [dist.new_group([0]), dist.new_group([1])]
mine = singles[RANK]


def group_facts() -> Any:
    facts: dict[str, Any] = {"world": [dist.get_rank(), dist.get_world_size()]}
    for label, group in (("pair", pair), ("single0", singles[0]), ("single1", singles[1])):
        facts[label] = {"rank": dist.get_rank(group), "size": dist.get_world_size(group),
                        "ranks": dist.get_process_group_ranks(group)}
        if RANK in facts[label]["ranks"]:
            facts[label]["group_rank_of_me"] = dist.get_group_rank(group, RANK)
            facts[label]["global_rank_of_0"] = dist.get_global_rank(group, 0)
    return facts


def group_collectives(dtype: str) -> Any:
    summed = values(dtype, 4, RANK)
    dist.all_reduce(summed, group=pair)
    alone = values(dtype, 4, RANK)
    dist.all_reduce(alone, group=mine)
    broadcast = values(dtype, 4, RANK)
    dist.broadcast(broadcast, src=1, group=pair)
    gathered = [sentinel(dtype, 4) for _ in range(2)]
    dist.all_gather(gathered, values(dtype, 4, RANK), group=pair)
    single = [sentinel(dtype, 4)]
    dist.all_gather(single, values(dtype, 4, RANK), group=mine)
    outsider = values(dtype, 4, RANK)  # a group this rank is not in: PyTorch warns and leaves the tensor
    dist.all_reduce(outsider, group=singles[PEER])
    return {"pair_sum": encode(summed), "alone_sum": encode(alone), "pair_broadcast": encode(broadcast),
            "pair_gather": encode(gathered), "single_gather": encode(single), "outsider_sum": encode(outsider)}


def single_group_case(dtype: str, kind: str, is_async: bool) -> Any:
    """Collectives over a group of this rank alone (megatron at tp=1: the batch's broadcast in get_batch, the
    timers' all_gather_into_tensor of a row into its own tensor)."""
    tensor, base = target(kind, dtype, 4)
    fill(tensor, values(dtype, 4, RANK))
    work = dist.broadcast(tensor, src=RANK, group=mine, async_op=is_async)
    result = {"handle": finish(work, is_async), "tensor": encode(tensor), "base": encode(base)}
    keyword = values(dtype, 4, RANK)
    dist.broadcast(keyword, RANK, mine)  # positional
    result["positional"] = encode(keyword)
    rows = sentinel(dtype, 8).view(2, 4)
    fill(rows[0], values(dtype, 4, RANK))
    work = dist.all_gather_into_tensor(rows[0].view(-1), rows[0].view(-1), group=mine, async_op=is_async)
    result["gather_in_place"] = [finish(work, is_async), encode(rows)]
    output = sentinel(dtype, 4)
    dist.all_gather_into_tensor(output, values(dtype, 4, RANK), group=mine)
    result["gather_owned"] = encode(output)
    return result


def mindspore_all_to_all_single(dtype: str) -> Any:
    """MindSpeed's MindSpore all-to-all (the MoE alltoall_seq dispatcher): ``mindspore.mint.distributed
    .all_to_all_single(output, input, splits, splits, group=group._name)`` on our side, PyTorch's
    ``all_to_all_single`` on the same group on the reference side: the same blocks."""
    send = [RANK + 1, 2]
    receive = [source + 1 for source in range(WORLD)] if RANK == 0 else [2] * WORLD
    rows = values(dtype, sum(send) * 2, RANK).reshape(sum(send), 2)
    output = sentinel(dtype, sum(receive) * 2).view(sum(receive), 2)
    if SIDE == "mindspore":
        import mindspore

        mindspore.mint.distributed.all_to_all_single(output, rows, output_split_sizes=receive, input_split_sizes=send,
                                                     group=pair.name())  # MSAdapter: group._name
    else:
        dist.all_to_all_single(output, rows, output_split_sizes=receive, input_split_sizes=send, group=pair)
    return {"output": encode(output)}


run("new_group/facts/-/sync", group_facts)
for dtype in ("float32", "bfloat16"):
    run(f"new_group/{dtype}/mint_all_to_all_single/sync", mindspore_all_to_all_single, dtype)
for dtype in ("float32", "float64", "int64", "bool"):
    run(f"new_group/{dtype}/collectives/sync", group_collectives, dtype)
for dtype in ("float32", "int64", "bool"):
    for kind in ("owned", "slice"):
        for is_async in SYNC:
            run(f"new_group/{dtype}/single_{kind}/{'async' if is_async else 'sync'}", single_group_case, dtype, kind,
                is_async)
run("new_group/object/all_gather_object/sync", object_case, "all_gather_object", pair)
run("new_group/object/broadcast_object_list/sync", object_case, "broadcast_object_list", pair)



# --- megatron's timer report (training_log every --log-interval): its gathered times, min/max and per-rank text -------
def timers_case(option: str) -> Any:
    from megatron.core.timers import Timers

    if SIDE == "pytorch":  # CPU PyTorch has no CUDA device: megatron's zeros(device=current_device()) on the CPU
        torch.cuda.current_device = lambda: "cpu"
    timers = Timers(2, option)
    names = ["forward-backward", "batch-generator", "optimizer", "params-all-gather"]
    for i, name in enumerate(names[:3]):
        timer = timers(name, log_level=0)
        # seconds as megatron's timers hold them; rank 0 never ran "batch-generator" (filtered: not > 0)
        timer._elapsed = 0.0 if (RANK == 0 and i == 1) else 0.1 * (i + 1) + 0.0137 * RANK
    text = timers.get_all_timers_string(names, normalizer=3.0, reset=False)
    again = timers.get_all_timers_string(names, normalizer=7.0, reset=True)  # reset: every time 0 afterwards
    # ours reads the gathered times on the host (mindspeed_ms.compat.megatron_timers); PyTorch runs megatron's own
    owner = "mindspeed_ms.compat.megatron_timers" if SIDE == "mindspore" else "megatron.core.timers"
    expected_owner = all(getattr(Timers, method).__module__ == owner for method in (
        "_get_elapsed_time_all_ranks", "_get_global_min_max_time", "_get_all_ranks_time_string"))
    return {"text": text, "again": again, "after_reset": timers.get_all_timers_string(names, normalizer=1.0),
            "expected_owner": expected_owner}


for option in ("minmax", "max", "all"):
    run(f"timers/{option}/-/sync", timers_case, option)

OUT_DIR.mkdir(parents=True, exist_ok=True)
partial = OUT_DIR / f".rank{RANK}.json"
partial.write_text(json.dumps(results, sort_keys=True))
partial.rename(OUT_DIR / f"rank{RANK}.json")
# Leave only when every rank has finished communicating: a closing barrier raced with the peer's exit on
# MindSpore's CPU backend ("RingAllReduce wait sending ... failed" once the other rank had gone).
deadline = time.monotonic() + 120
while len(list(OUT_DIR.glob("rank*.json"))) < WORLD and time.monotonic() < deadline:
    time.sleep(0.05)
if SIDE == "pytorch":
    dist.destroy_process_group()
