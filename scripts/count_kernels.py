"""Count the kernels one training step of examples/pretrain_gpt.py launches, by phase, op and origin.

Runs as the worker of a one-process launch, on either backend::

    msrun --worker_num=1 --local_worker_num=1 --master_port=8123 --join=True --log_dir=/tmp/ck \\
        scripts/count_kernels.py OUT.json examples/pretrain_gpt.py --train-iters 8 \\
        --hidden-size 64 --num-attention-heads 4 --seq-length 32 --ai-framework mindspore
    .venv-ref/bin/python -m torch.distributed.run --nproc-per-node 1 \\
        scripts/count_kernels.py OUT.json examples/pretrain_gpt.py --train-iters 8 ...

Iterations ``COUNT_FROM`` (default 5) to ``COUNT_FROM + COUNT_STEPS - 1`` (default 2 steps) are recorded.
MindSpore: its profiler (CPU activity) gives every kernel launched (forward, the autograd engine's
backward, the optimizer); a ``sys.setprofile`` hook records each Python-to-C call's time span and
the Python frames that made it, so a kernel launched inside one is attributed to the megatron/example
line, the mindspeed_ms function and the MSAdapter function that issued it; a kernel outside any such
call (or inside the backward entry) is the autograd engine's (a bprop). PyTorch: ``torch.profiler``'s
outermost ``aten::`` ops (those not called by another op: one dispatch each
from Python or from an autograd node), attributed the same way by phase.

``COUNT_CALLS_ONLY=1`` (MindSpore): no profiler, only the Python-to-C calls (``c_calls``, ``c_call_ms``: their
count and time per step by phase, undisturbed by the profiler's own cost).

Writes ``OUT.json``: ``{"backend", "steps", "phases": {phase: {op: count per step}},
"kernel_ms": {phase: {op: kernel milliseconds per step}}, "origins": {phase: {origin: {op: count per step}}}}``
(PyTorch's milliseconds: each op's CPU time, children included). ``python scripts/count_kernels.py --report OUT.json
[OTHER.json]`` prints the tables (side by side when two files are given).
"""

from __future__ import annotations

import collections
import functools
import json
import os
import runpy
import sys
import tempfile
import time
from bisect import bisect_right
from pathlib import Path
from typing import Any, Callable

_PHASES: list[tuple[str, int, int]] = []  # (phase, start ns, end ns) of recorded iterations
_state: dict[str, Any] = {"iteration": 0, "recording": False, "profiler": None}
_calls: list[tuple[int, int, str]] = []  # (start ns, end ns, origin) of each Python -> C call while recording
_open: list[tuple[int, Any]] = []
_gc: list[tuple[int, int]] = []  # (start ns, end ns) of the garbage collector's passes while recording
_gc_open: list[int] = []


def _gc_callback(phase: str, info: dict[str, int]) -> None:
    if not _state["recording"]:
        return
    if phase == "start":
        _gc_open.append(time.time_ns())
    elif _gc_open:
        _gc.append((_gc_open.pop(), time.time_ns()))


def _frame_kind(filename: str) -> str:
    if "/mindspeed_ms/" in filename:
        return "ours"
    if "/megatron/" in filename or "/examples/" in filename:
        return "user"
    if "/site-packages/torch/" in filename or "/msadapter/" in filename:
        return "msa"
    return ""


def _origin(frame: Any) -> str:
    found: dict[str, str] = {}
    while frame is not None and len(found) < 3:
        kind = _frame_kind(frame.f_code.co_filename)
        if kind and kind not in found:
            name = frame.f_code.co_filename.rsplit("/", 2)
            found[kind] = f"{'/'.join(name[-2:])}:{frame.f_lineno} {frame.f_code.co_name}"
        frame = frame.f_back
    return " | ".join(f"{kind} {found[kind]}" for kind in ("user", "ours", "msa") if kind in found) or "?"


def _hook(frame: Any, event: str, arg: Any) -> None:
    if event == "c_call":
        _open.append((time.time_ns(), frame))
    elif event in ("c_return", "c_exception") and _open:
        start, caller = _open.pop()
        end = time.time_ns()
        if end - start > 2000:  # a kernel takes longer than this; skips cheap builtins (len, isinstance)
            _calls.append((start, end, f"{getattr(arg, '__qualname__', arg)} <- {_origin(caller)}"))


def _phase(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.time_ns()
        try:
            return function(*args, **kwargs)
        finally:
            if _state["recording"]:
                _PHASES.append((name, start, time.time_ns()))

    return timed


def _start(mindspore: bool) -> None:
    if mindspore and os.environ.get("COUNT_CALLS_ONLY"):
        profiler = None
        sys.setprofile(_hook)
    elif mindspore:
        import mindspore as ms
        from mindspore.profiler import ProfilerActivity

        out = tempfile.mkdtemp(prefix="count_kernels_")
        profiler = ms.profiler.profile(activities=[ProfilerActivity.CPU],
                                       on_trace_ready=ms.profiler.tensorboard_trace_handler(out))
        _state["out"] = out
        profiler.start()
        sys.setprofile(_hook)
    else:
        import torch

        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        profiler.__enter__()
        _state["wall0"] = time.time_ns()
    _state["profiler"] = profiler
    _state["recording"] = True


def _kernels_mindspore() -> list[tuple[int, str, float]]:
    sys.setprofile(None)
    if _state["profiler"] is None:  # COUNT_CALLS_ONLY: the Python -> C calls and their times only
        return []
    _state["profiler"].stop()
    found = list(Path(_state["out"]).glob("*/FRAMEWORK/cpu_op_execute_timestamp_*.txt"))
    kernels: list[tuple[int, str, float]] = []
    for path in found:
        for line in path.read_text().splitlines():
            name, _, rest = line.split(";", 2)  # each item: start ns, duration ms, ...
            kernels.extend((int(item.split(",")[0]), name, float(item.split(",")[1])) for item in rest.split())
    return kernels


def _kernels_torch() -> list[tuple[int, str, str, float]]:
    profiler = _state["profiler"]
    profiler.__exit__(None, None, None)
    events = profiler.events()
    # the profiler's clock: align its first event with the wall clock read just before it started
    kernels = []
    for event in events:
        if not event.name.startswith("aten::") or (event.cpu_parent is not None
                                                    and event.cpu_parent.name.startswith("aten::")):
            continue  # an op called by another op runs inside it: one dispatch from Python or autograd
        parent = event.cpu_parent
        while parent is not None and parent.cpu_parent is not None:
            parent = parent.cpu_parent
        kernels.append((event.time_range.start, event.name[6:], parent.name if parent is not None else "?",
                        event.cpu_time_total / 1000))
    return kernels


def _write(out: str, mindspore: bool, steps: int) -> None:
    phases: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    kernel_ms: dict[str, dict[str, float]] = collections.defaultdict(lambda: collections.defaultdict(float))
    origins: dict[str, dict[str, collections.Counter[str]]] = collections.defaultdict(
        lambda: collections.defaultdict(collections.Counter))
    windows = sorted(_PHASES, key=lambda p: (p[1], -p[2]))
    gc_ms: dict[str, float] = collections.defaultdict(float)
    for start, end in _gc:
        phase = "other"
        for window, w_start, w_end in windows:
            if w_start <= start <= w_end:
                phase = window
        gc_ms[phase] += (end - start) / 1e6 / steps
    calls_by_phase: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    call_ms: dict[str, dict[str, float]] = collections.defaultdict(lambda: collections.defaultdict(float))
    for start, _end, label in _calls:
        phase = "other"
        for window, w_start, w_end in windows:
            if w_start <= start <= w_end:
                phase = window
        calls_by_phase[phase][label] += 1
        call_ms[phase][label.split(" <- ")[0]] += (_end - start) / 1e6 / steps
    if mindspore:
        kernels = [(t, name, "", ms) for t, name, ms in _kernels_mindspore()]
        calls = sorted(_calls)
        starts = [c[0] for c in calls]
    else:
        raw = _kernels_torch()
        offset = _state["wall0"] - min(t for t, _, _, _ in raw) * 1000 if raw else 0
        kernels = [(t * 1000 + offset, name, top, ms) for t, name, top, ms in raw]
    for t, name, top, ms in kernels:
        phase = "other"
        for window, start, end in windows:  # the innermost window holding it (later, shorter ones are inside)
            if start <= t <= end:
                phase = window
        phases[phase][name] += 1
        kernel_ms[phase][name] += ms / steps
        if mindspore:
            origin = "autograd engine (bprop)" if phase == "backward" else "no Python call"
            index = bisect_right(starts, t) - 1
            while index >= 0:
                start, end, label = calls[index]
                if start <= t <= end:
                    if "run_backward" not in label and "backward" not in label.split(" <- ")[0]:
                        origin = label
                    break
                index -= 1
        else:
            origin = top
        origins[phase][origin][name] += 1
    result = {"backend": "mindspore" if mindspore else "pytorch", "steps": steps,
              "phases": {p: {k: v / steps for k, v in c.most_common()} for p, c in phases.items()},
              "kernel_ms": {p: dict(sorted(c.items(), key=lambda kv: -kv[1])) for p, c in kernel_ms.items()},
              "gc_ms": dict(gc_ms),
              "c_call_ms": {p: dict(sorted(c.items(), key=lambda kv: -kv[1])) for p, c in call_ms.items()},
              "c_calls": {p: {k: v / steps for k, v in c.most_common()} for p, c in calls_by_phase.items()},
              "origins": {p: {o: {k: v / steps for k, v in c.most_common()} for o, c in by.items()}
                          for p, by in origins.items()}}
    Path(out).write_text(json.dumps(result, indent=1))


def _instrument(out: str) -> None:
    import mindspeed_ms.adaptor  # noqa: F401  (the framework switch, as the example's first line)

    # isort: split
    import megatron.core.distributed as distributed
    from megatron.core.optimizer.optimizer import ChainedOptimizer
    from megatron.core.pipeline_parallel import schedules

    mindspore = "--ai-framework" in sys.argv and sys.argv[sys.argv.index("--ai-framework") + 1] == "mindspore"
    first = int(os.environ.get("COUNT_FROM", "5"))
    steps = int(os.environ.get("COUNT_STEPS", "2"))
    step_function = schedules.forward_backward_no_pipelining

    @functools.wraps(step_function)
    def step(*args: Any, **kwargs: Any) -> Any:  # the iteration starts with the forward-backward function
        _state["iteration"] += 1
        if _state["iteration"] == first:
            _start(mindspore)
        return step_function(*args, **kwargs)

    schedules.forward_backward_no_pipelining = step
    schedules.forward_step = _phase("forward", schedules.forward_step)
    schedules.backward_step = _phase("backward", schedules.backward_step)
    distributed.finalize_model_grads = _phase("ddp finalize", distributed.finalize_model_grads)
    for method, name in (("prepare_grads", "prepare grads"), ("get_grad_norm", "grad norm"),
                         ("count_zeros", "count zeros"), ("step_with_ready_grads", "optimizer update")):
        setattr(ChainedOptimizer, method, _phase(name, getattr(ChainedOptimizer, method)))
    optimizer_step = _phase("optimizer step", ChainedOptimizer.step)

    @functools.wraps(optimizer_step)
    def closing(*args: Any, **kwargs: Any) -> Any:
        try:
            return optimizer_step(*args, **kwargs)
        finally:
            if _state["recording"] and _state["iteration"] == first + steps - 1:
                _state["recording"] = False
                if os.environ.get("RANK", "0") == "0":
                    _write(out, mindspore, steps)

    ChainedOptimizer.step = closing


def _report(paths: list[str]) -> None:
    results = [json.loads(Path(p).read_text()) for p in paths]
    phases = sorted({p for r in results for p in r["phases"]})
    for phase in phases:
        counts = [r["phases"].get(phase, {}) for r in results]
        times = [r.get("kernel_ms", {}).get(phase, {}) for r in results]
        totals = " vs ".join(f"{r['backend']} {sum(c.values()):.0f} ({sum(t.values()):.1f} ms)"
                             for r, c, t in zip(results, counts, times))
        sys.stdout.write(f"\n== {phase}: {totals} kernels per step (calls, kernel ms)\n")
        ops = sorted({op for c in counts for op in c},
                     key=lambda op: (-max(t.get(op, 0.0) for t in times), -max(c.get(op, 0) for c in counts)))
        for op in ops:
            sys.stdout.write(f"  {op:40s}" + "".join(f"{c.get(op, 0):8.1f}{t.get(op, 0.0):9.2f}"
                                                     for c, t in zip(counts, times)) + "\n")
        for result in results:
            by = result["origins"].get(phase, {})
            sys.stdout.write(f"  -- {result['backend']} by origin\n")
            for origin, ops_ in sorted(by.items(), key=lambda kv: -sum(kv[1].values())):
                listed = ", ".join(f"{k} {v:g}" for k, v in ops_.items())
                sys.stdout.write(f"  {sum(ops_.values()):6.1f}  {origin}\n          {listed}\n")


def main() -> None:
    if sys.argv[1] == "--report":
        _report(sys.argv[2:])
        return
    out, example, *args = sys.argv[1:]
    sys.argv = [example, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(example)))
    _instrument(out)
    import gc

    gc.callbacks.append(_gc_callback)
    runpy.run_path(example, run_name="__main__")


if __name__ == "__main__":
    main()
