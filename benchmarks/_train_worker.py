"""Run examples/pretrain_gpt.py as ``__main__`` and report this process's peak RSS (and a profile) at exit.

Used by bench_train.py under torchrun and msrun: ``python _train_worker.py EXAMPLE ARGS...``. With
``BENCH_PROFILE=FILE`` the whole run is profiled with cProfile and the stats are written to FILE.rank<r>.
With ``BENCH_PHASES=1`` the phases of each training step are timed (forward, backward, DDP finalize,
the optimizer's gradient preparation, grad norm, clipping, zero count, update) and rank 0 prints the
median of each over the iterations after the third: ``bench: phase NAME MS``. With ``BENCH_BATON=MINE:OTHER``
(two FIFOs; tp=1) each iteration waits for a byte on MINE before megatron's forward-backward and writes one to
OTHER after the optimizer step, so that two runs started together (bench_ab.py --paired) take turns iteration by
iteration; rank 0 prints each iteration's time from the byte to the step's end: ``bench: step N MS``. With
``BENCH_MARK_STEPS=1`` each iteration's parts (zero_grad_buffer, zero_grad, forward-backward, the optimizer's
step) run inside a frame of this file named ``bench_warmup_step`` for the first 3 iterations and
``bench_steady_step`` after them: a sampling profiler (bench_train.py's py-spy share) counts the samples under
the second only. With ``BENCH_THREADS=1`` (and ``BENCH_PHASES=1``) rank 0 reads each of its threads' scheduler
counters (``/proc/self/task/TID/schedstat``: nanoseconds on a CPU, nanoseconds runnable but waiting for one) when
the third iteration ends and when the last one (``--train-iters``) ends, and prints each thread's share of the wall
time between: ``bench: thread NAME main|other ON_CPU_PERCENT WAITING_PERCENT`` (threads on a CPU at least 1% of it,
and the main thread).
"""

from __future__ import annotations

import functools
import os
import resource
import runpy
import statistics
import sys
import time
from typing import Any, Callable

_current: dict[str, float] = {}
_iterations: list[dict[str, float]] = []
_steps: list[float] = []
#: (perf_counter, :func:`thread_times`) when the warm-up iterations ended and when the last iteration ended
_thread_marks: list[tuple[float, dict[int, tuple[str, int, int]]]] = []
#: the iteration whose end is the second mark (``--train-iters``; 0: not asked for)
_last_iteration = [0]


def thread_times(tasks: str = "/proc/self/task") -> dict[int, tuple[str, int, int]]:
    """Each thread of this process: ``{tid: (name, ns on a CPU, ns runnable but waiting for a CPU)}``, from the
    kernel's scheduler counters (``schedstat``); the threads that cannot be read (ended meanwhile) are left out,
    and a system without the files gives ``{}``."""
    found: dict[int, tuple[str, int, int]] = {}
    try:
        tids = os.listdir(tasks)
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"{tasks}/{tid}/schedstat") as counters, open(f"{tasks}/{tid}/comm") as comm:
                on_cpu, waiting = counters.read().split()[:2]
                found[int(tid)] = (comm.read().strip(), int(on_cpu), int(waiting))
        except (OSError, ValueError):
            continue
    return found


def thread_shares(start: tuple[float, dict[int, tuple[str, int, int]]],
                  end: tuple[float, dict[int, tuple[str, int, int]]], main: int
                  ) -> list[tuple[str, bool, float, float]]:
    """``(name, is the main thread, % of the wall on a CPU, % waiting for one)`` of the threads alive at both marks,
    those on a CPU at least 1% of the wall and the main thread, busiest first."""
    wall_ns = (end[0] - start[0]) * 1e9
    shares = []
    for tid, (name, on_cpu, waiting) in end[1].items():
        if tid not in start[1] or wall_ns <= 0:
            continue
        _, on_cpu_before, waiting_before = start[1][tid]
        on, wait = 100 * (on_cpu - on_cpu_before) / wall_ns, 100 * (waiting - waiting_before) / wall_ns
        if on >= 1.0 or tid == main:
            shares.append((name, tid == main, on, wait))
    return sorted(shares, key=lambda share: -share[2])


def _proc_pid() -> int:
    """This process's number as /proc numbers it (a sandbox's own PID namespace over the host's /proc: getpid()'s
    number is not a task there); the main thread's task number is the same."""
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return os.getpid()


def _mark_threads() -> None:
    if os.environ.get("BENCH_THREADS") and os.environ.get("RANK", "0") == "0" and (
            len(_iterations) == WARMUP_ITERATIONS or len(_iterations) == _last_iteration[0]):
        _thread_marks.append((time.perf_counter(), thread_times()))


def _report_peak_rss() -> None:
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"bench: rank {os.environ.get('RANK', '0')} peak RSS {peak_kib / 1024:.1f} MiB", flush=True)


def _timed(name: str, function: Callable[..., Any], closes_iteration: bool = False) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _current[name] = _current.get(name, 0.0) + time.perf_counter() - start
            if closes_iteration:
                _iterations.append(dict(_current))
                _current.clear()
                _mark_threads()

    return timed


def _instrument() -> None:
    """Wrap the step's phases; the example's first import (the adaptor) runs here first, with its argv."""
    import mindspeed_ms.adaptor  # noqa: F401  (the framework switch, as the example's first line)

    # isort: split
    import megatron.core.distributed as distributed
    from megatron.core.optimizer.optimizer import ChainedOptimizer
    from megatron.core.pipeline_parallel import schedules

    schedules.forward_step = _timed("forward", schedules.forward_step)
    schedules.backward_step = _timed("backward", schedules.backward_step)
    distributed.finalize_model_grads = _timed("ddp finalize", distributed.finalize_model_grads)
    for method, name in (("prepare_grads", "prepare grads"), ("get_grad_norm", "grad norm"),
                         ("count_zeros", "count zeros"), ("step_with_ready_grads", "optimizer update")):
        setattr(ChainedOptimizer, method, _timed(name, getattr(ChainedOptimizer, method)))
    ChainedOptimizer.step = _timed("optimizer step", ChainedOptimizer.step, closes_iteration=True)
    baton = os.environ.get("BENCH_BATON")
    if baton:
        mine, _, other = baton.partition(":")
        take_turns(mine, other, schedules, ChainedOptimizer)


def take_turns(mine_path: str, other_path: str, schedules: Any, optimizer: Any) -> None:
    """Wait for a byte on ``mine_path`` before each forward-backward, write one to ``other_path`` after each step.
    Both FIFOs are opened read-write: no open blocks, and a byte left for a finished run is never waited for."""
    mine, other = os.open(mine_path, os.O_RDWR), os.open(other_path, os.O_RDWR)
    forward_backward, step = schedules.forward_backward_no_pipelining, optimizer.step
    started: list[float] = []

    @functools.wraps(forward_backward)
    def turn(*args: Any, **kwargs: Any) -> Any:
        os.read(mine, 1)
        started.append(time.perf_counter())
        return forward_backward(*args, **kwargs)

    @functools.wraps(step)
    def stepped(*args: Any, **kwargs: Any) -> Any:
        try:
            return step(*args, **kwargs)
        finally:
            _steps.append(time.perf_counter() - started[-1])
            os.write(other, b"x")

    schedules.forward_backward_no_pipelining = turn
    optimizer.step = stepped


#: the iterations a sampling profiler leaves out (first calls: MindSpore's kernel selection, caches); as the step
#: times bench_train.py reports
WARMUP_ITERATIONS = 3


def mark_steps(schedules: Any, optimizer: Any, ddp: Any) -> None:
    """Run each iteration's parts inside ``bench_warmup_step`` (the first :data:`WARMUP_ITERATIONS`) or
    ``bench_steady_step`` (after them): frames a sampler sees. ``optimizer``'s ``step`` closes an iteration."""
    finished = [0]

    def marked(function: Callable[..., Any], closes_iteration: bool = False) -> Callable[..., Any]:
        def bench_warmup_step(*args: Any, **kwargs: Any) -> Any:
            return function(*args, **kwargs)

        def bench_steady_step(*args: Any, **kwargs: Any) -> Any:
            return function(*args, **kwargs)

        @functools.wraps(function)
        def step_part(*args: Any, **kwargs: Any) -> Any:
            try:
                if finished[0] < WARMUP_ITERATIONS:
                    return bench_warmup_step(*args, **kwargs)
                return bench_steady_step(*args, **kwargs)
            finally:
                if closes_iteration:
                    finished[0] += 1

        return step_part

    schedules.forward_backward_no_pipelining = marked(schedules.forward_backward_no_pipelining)
    ddp.zero_grad_buffer = marked(ddp.zero_grad_buffer)
    optimizer.zero_grad = marked(optimizer.zero_grad)
    optimizer.step = marked(optimizer.step, closes_iteration=True)


def _report_phases() -> None:
    if os.environ.get("RANK", "0") != "0":
        return
    for index, seconds in enumerate(_steps, 1):
        print(f"bench: step {index} {1000 * seconds:.3f}", flush=True)
    if len(_iterations) < 4:
        return
    timed = _iterations[3:]
    for name in ("forward", "backward", "ddp finalize", "prepare grads", "grad norm", "clip", "count zeros",
                 "optimizer update", "optimizer step"):
        if name == "clip":  # what ChainedOptimizer.step spends outside the phases it calls: the clipping
            values = [it.get("optimizer step", 0.0) - sum(it.get(part, 0.0) for part in
                      ("prepare grads", "grad norm", "count zeros", "optimizer update")) for it in timed]
        else:
            values = [it.get(name, 0.0) for it in timed]
        print(f"bench: phase {name} {1000 * statistics.median(values):.3f}", flush=True)
    if len(_thread_marks) == 2:
        for name, is_main, on_cpu, waiting in thread_shares(*_thread_marks, _proc_pid()):
            print(f"bench: thread {name.replace(' ', '_')} {'main' if is_main else 'other'} {on_cpu:.1f} "
                  f"{waiting:.1f}", flush=True)


def _best_per_call(function: Callable[[], Any], calls: int = 2000, repeats: int = 41) -> float:
    """Seconds per call of ``function`` (``calls`` calls in a loop, the best of ``repeats``: short loops, so that
    some run without being preempted on a loaded machine), on the profiler's clock (``BENCH_PROFILE_TIMER=thread``:
    this thread's CPU time, else the wall clock)."""
    clock = time.thread_time if os.environ.get("BENCH_PROFILE_TIMER") == "thread" else time.perf_counter
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        for _ in range(calls):
            function()
        best = min(best, clock() - start)
    return best / calls


def _dump_passthrough(path: str) -> None:
    """Write what mindspeed_ms's C pass-through wrappers cost this process: their calls (a counter in the
    extension) and the cost of one call of each kind, measured here (cProfile cannot see them: their time lands
    in their callers'). bench_train.py adds calls x cost to our share.

    Per call, each timed in a loop of calls through a lambda, less the same loop calling what the wrapper hands
    on (the op is not ours) or nothing: a Guard with everything it can do (the grad-flag check on MindSpore's
    real executor, and an exception filter) around ``id``, less ``id``; a Fork on two tensors of one dtype (its
    longer test) around ``operator.is_``, less ``operator.is_``; a GradRead of a real tensor on its
    longest path (non-leaf, requires grad, retained: four attribute reads, no warning), less nothing; an
    AttrWrite of ``_grad``, less nothing; a Mark on its longer path (a view naming its tensor), less the op. The
    guards without the check cost less than the figure counted."""
    import functools as _functools
    import json
    import operator

    try:
        from mindspeed_ms.engine import passthrough
    except ImportError:  # a tree from before the pass-through wrappers (bench_train.py --before)
        calls: dict[str, int] = {}
    else:
        calls = passthrough.calls()
    cost: dict[str, float] = {}
    if calls:
        import torch  # MSAdapter's, in this process
        from mindspore.common.api import _pynative_executor

        flags = _pynative_executor._executor
        guard = passthrough.guard(id, catch=(ValueError, TypeError), on_error=repr, check=flags.grad_flag,
                                  fix=_functools.partial(flags.set_grad_flag, True))
        tensor = torch.ones(1, requires_grad=True) * 2  # a non-leaf that requires grad
        tensor.retain_grad()
        read = passthrough.grad_read("_grad", "_is_leaf", "_requires_grad", "_mindspeed_retains_grad", print)
        write = passthrough.attr_write("_grad")
        forked = passthrough.fork(operator.is_, operator.is_, "_dtype", cls=type(tensor))
        nothing = _best_per_call(lambda: None)
        cost = {"Guard": max(_best_per_call(lambda: guard(tensor)) - _best_per_call(lambda: id(tensor)), 0.0),
                "Fork": max(_best_per_call(lambda: forked(tensor, tensor))
                            - _best_per_call(lambda: operator.is_(tensor, tensor)), 0.0),
                "GradRead": max(_best_per_call(lambda: read(tensor)) - nothing, 0.0),
                "AttrWrite": max(_best_per_call(lambda: write(tensor, None)) - nothing, 0.0)}
        if "Mark" in calls:  # a tree from before Mark (bench_train.py --before) counts none
            # its longer path (Tensor.t's: the first argument's shape read, then the write) around an attribute read
            # returning another tensor, less that read
            tensor._mindspeed_bench_other = torch.ones(1)
            other = operator.attrgetter("_mindspeed_bench_other")
            marked = passthrough.mark(other, "_mindspeed_bench_mark", shape="_shape", ndim=len(tensor._shape))
            cost["Mark"] = max(_best_per_call(lambda: marked(tensor)) - _best_per_call(lambda: other(tensor)), 0.0)
    with open(path, "w") as out:
        json.dump({"calls": calls, "cost_s": cost}, out)


def main() -> None:
    example, *args = sys.argv[1:]
    sys.argv = [example, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(example)))  # as `python EXAMPLE` does (its sibling modules)
    profile_to = os.environ.get("BENCH_PROFILE")
    if "--train-iters" in args[:-1]:
        _last_iteration[0] = int(args[args.index("--train-iters") + 1])
    if os.environ.get("BENCH_PHASES"):
        _instrument()
    if os.environ.get("BENCH_MARK_STEPS"):
        import mindspeed_ms.adaptor  # noqa: F401  (the framework switch, as the example's first line)

        # isort: split
        from megatron.core.distributed import DistributedDataParallel
        from megatron.core.optimizer.optimizer import ChainedOptimizer
        from megatron.core.pipeline_parallel import schedules

        mark_steps(schedules, ChainedOptimizer, DistributedDataParallel)
    try:
        if profile_to:
            import cProfile

            # BENCH_PROFILE_TIMER=thread: this thread's CPU time (time.thread_time) instead of the wall clock:
            # what the Python code itself costs, unaffected by other processes on a loaded machine (time spent
            # waiting for kernels on other threads is not counted either)
            thread = os.environ.get("BENCH_PROFILE_TIMER") == "thread"
            profiler = cProfile.Profile(time.thread_time) if thread else cProfile.Profile()
            profiler.enable()
            try:
                runpy.run_path(example, run_name="__main__")
            finally:
                profiler.disable()
                profiler.dump_stats(f"{profile_to}.rank{os.environ.get('RANK', '0')}")
                _dump_passthrough(f"{profile_to}.rank{os.environ.get('RANK', '0')}.passthrough.json")
        else:
            runpy.run_path(example, run_name="__main__")
    finally:
        _report_phases()
        _report_peak_rss()


if __name__ == "__main__":
    main()
