"""benchmarks/bench_ab.py's protocol: the alternating order, the ratios' summary, and the baton of
benchmarks/_train_worker.py that makes two runs take turns iteration by iteration (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _helpers import ROOT

BENCHMARKS = ROOT / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}_under_test", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
        del sys.modules[spec.name]
    return module


def test_the_sides_alternate_their_order_by_round() -> None:
    bench_ab = _load("bench_ab")
    assert [bench_ab.order(index, ["before", "after"]) for index in range(4)] == [
        ["before", "after"], ["after", "before"], ["before", "after"], ["after", "before"]]
    assert bench_ab.order(1, ["before", "after", "pytorch"]) == ["pytorch", "after", "before"]


def test_the_summary_is_the_median_and_spread_of_the_rounds_ratios() -> None:
    bench_ab = _load("bench_ab")
    rounds = []
    for before, after, low in ((100.0, 90.0, 80.0), (200.0, 220.0, 100.0), (150.0, 150.0, 90.0)):
        entry = bench_ab.Round()
        entry.steps.update(before=before, after=after)
        entry.minimum.update(before=low, after=low / 2)
        rounds.append(entry)
    found = bench_ab.summarize(rounds, "after", "before")
    assert found["median"] == pytest.approx(1.0)
    assert (found["min"], found["max"]) == (pytest.approx(0.9), pytest.approx(1.1))
    assert found["half_range"] == pytest.approx(0.1)
    assert found["median_of_min"] == pytest.approx(0.5)
    rounds[0].paired = [0.5, 0.7, 0.6]  # a paired round: the median of its per-iteration ratios
    assert bench_ab.summarize(rounds, "after", "before")["min"] == pytest.approx(0.6)
    assert bench_ab.summarize(rounds, "after", "before")["median"] == pytest.approx(1.0)


_SIDE = """
import sys, time, types
sys.path.insert(0, {benchmarks!r})
import _train_worker
log = open({log!r}, "a", buffering=1)
name = sys.argv[1]
def forward_backward():
    log.write(f"{{name}} start\\n")
    time.sleep(0.05)
def step():
    log.write(f"{{name}} end\\n")
schedules = types.SimpleNamespace(forward_backward_no_pipelining=forward_backward)
optimizer = types.SimpleNamespace(step=step)
_train_worker.take_turns(sys.argv[2], sys.argv[3], schedules, optimizer)
for _ in range(3):
    schedules.forward_backward_no_pipelining()
    optimizer.step()
_train_worker._report_phases()
"""


def test_two_runs_with_the_baton_take_turns_iteration_by_iteration(tmp_path: Path) -> None:
    first, second, log = tmp_path / "first", tmp_path / "second", tmp_path / "log"
    os.mkfifo(first)
    os.mkfifo(second)
    script = tmp_path / "side.py"
    script.write_text(textwrap.dedent(_SIDE.format(benchmarks=str(BENCHMARKS), log=str(log))))
    held = os.open(first, os.O_RDWR)
    try:
        # "b" starts first and waits: nothing runs until the byte on "first"
        b = subprocess.Popen([sys.executable, str(script), "b", str(second), str(first)], stdout=subprocess.PIPE,
                             text=True)
        a = subprocess.Popen([sys.executable, str(script), "a", str(first), str(second)], stdout=subprocess.PIPE,
                             text=True)
        os.write(held, b"x")
        outputs = [process.communicate(timeout=60)[0] for process in (a, b)]
    finally:
        os.close(held)
    assert [a.returncode, b.returncode] == [0, 0]
    assert log.read_text().split("\n")[:-1] == [f"{side} {what}" for _ in range(3) for side in "ab"
                                                for what in ("start", "end")]
    for output in outputs:  # each iteration's time, from its turn to its step's end (the sleep: >= 50 ms)
        steps = [line.split() for line in output.splitlines() if line.startswith("bench: step")]
        assert [int(step[2]) for step in steps] == [1, 2, 3]
        assert all(float(step[3]) >= 49.0 for step in steps)


def test_a_runs_steps_and_losses_are_read_once_when_its_output_holds_them_twice() -> None:
    """msrun's output and rank 0's log both hold the example's lines: each iteration counts once, the first three
    (one-time setup) are not timed steps."""
    bench_train = _load("bench_train")
    line = "iteration {:4d}/  10 | lm loss {:.6f} | grad norm 2.7830 | elapsed time per iteration (ms): {:.1f}\n"
    output = "".join(line.format(index, 4.0 + index, 100.0 * index) for index in range(1, 11))
    result = bench_train.Result()
    bench_train.parse_output(output + "bench: rank 0 peak RSS 1.0 MiB\n" + output, result, 1.0)
    assert result.steps_ms == [400.0, 500.0, 600.0, 700.0, 800.0, 900.0, 1000.0]
    assert result.losses == [f"{4.0 + index:.6f}" for index in range(1, 11)]


def test_each_thread_of_a_run_is_read_from_its_scheduler_counters() -> None:
    """BENCH_THREADS: the worker's counters of this very process (a thread that spins is on a CPU for most of
    the wall between two marks), the shares between two marks, and the bench's reading of the lines."""
    import threading
    import time

    worker = _load("_train_worker")
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [None for _ in iter(stop.is_set, True)])
    spinner.start()
    try:
        start = (time.perf_counter(), worker.thread_times())
        time.sleep(0.4)
        end = (time.perf_counter(), worker.thread_times())
    finally:
        stop.set()
        spinner.join()
    if not start[1]:  # no /proc/self/task here: nothing is read, nothing is claimed
        assert worker.thread_times("/nonexistent") == {}
        return
    main = worker._proc_pid()
    assert main in start[1]
    assert main in end[1]
    assert all(on >= 0 and wait >= 0 for _, on, wait in end[1].values())
    shares = worker.thread_shares(start, end, main)
    # the spinner (Python names no OS thread: its name is the process's) spun the whole wall, less its waits
    assert max(on for _, is_main, on, _ in shares if not is_main) > 20.0
    assert [is_main for _, is_main, _, _ in shares].count(True) == 1  # the main thread, asleep, still listed
    # the shares of a synthetic pair of marks: 1 s apart, one thread ran 0.5 s and waited 0.25 s, one never ran
    first = (10.0, {7: ("main", 100, 0), 8: ("ActorThread_0", 0, 0), 9: ("idle", 5, 5)})
    second = (11.0, {7: ("main", 100 + 10**7, 0), 8: ("ActorThread_0", 5 * 10**8, 25 * 10**7), 9: ("idle", 5, 5),
                     10: ("born later", 10**9, 0)})
    assert worker.thread_shares(first, second, 7) == [("ActorThread_0", False, 50.0, 25.0), ("main", True, 1.0, 0.0)]
    bench_train = _load("bench_train")
    lines = "bench: thread python main 96.3 3.5\nbench: thread ActorThread_0 other 59.2 40.9\n"
    result = bench_train.Result()
    bench_train.parse_output(lines + lines, result, 1.0)  # msrun's output and rank 0's log: read once
    bench_train.parse_output(lines.replace("96.3", "90.1"), result, 1.0)  # a second run
    assert result.threads == {"main": [(96.3, 3.5), (90.1, 3.5)], "ActorThread_0": [(59.2, 40.9), (59.2, 40.9)]}
    assert bench_train.format_threads(result.threads) == "main 93.2/3.5, ActorThread_0 59.2/40.9"
