"""Before/after A/B of the example's training step on MindSpore, alternating, with the ratio's spread.

On a shared machine one configuration's step time moves by 30-50% between two quiet runs minutes apart (the last
stop's two mid runs of the same tree), more than most changes. Here the two sides (``--before``: another checkout's
mindspeed_ms and/or ``--before-env``; after: this tree and/or ``--after-env``) run one after the other in every round,
the order alternating (before-after, after-before, ...: a drift in the load hits both sides alike), over
``--rounds`` rounds (5 or more). Each round gives one ratio after/before of the two runs' median steps (steps after
the third); the summary is the median of those ratios and their spread (min, max, and the half-range), so that a
change is told from the noise: a change smaller than the spread is not shown. With ``--pytorch`` each round also runs
PyTorch (torchrun, the reference interpreter) and gives after/PyTorch for that round.

``--paired``: the two sides run at the same time, taking turns iteration by iteration (two FIFOs pass a baton:
``BENCH_BATON`` of benchmarks/_train_worker.py; while one side computes its iteration the other waits in a read),
so each iteration of one side has a neighbour of the other side a few hundred milliseconds away; each round's
ratio is then the median over the iterations after the third (and before the last: the side that ends first
exits during the other's last one) of after_i / before_i, and the side that goes first
alternates by round. PyTorch, with ``--pytorch``, runs on its own after each pair.

Only ratios from the same round are compared; the 1-minute load average before each run is printed next to it
(``os.getloadavg``), since absolute times on the shared machine say little. The losses of the two sides are compared
(identical or not: the A/B of a change that keeps the arithmetic must print True). Nothing is asserted about times.

    python benchmarks/bench_ab.py --before /tmp/before-tree [--size mid] [--rounds 5] [--iters 10]
        [--before-env K=V ...] [--after-env K=V ...] [--pytorch] [--reference-python .venv-ref/bin/python]

A null run (``--before`` this very tree) shows the protocol's own spread.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_train  # noqa: E402  # the sibling script: its runner and parser

__all__ = ["Round", "order", "summarize"]


@dataclass
class Round:
    """One round: each side's median step (ms), the load average before its run, its losses."""

    steps: dict[str, float] = field(default_factory=dict)
    minimum: dict[str, float] = field(default_factory=dict)
    load: dict[str, float] = field(default_factory=dict)
    losses: dict[str, list[str]] = field(default_factory=dict)
    paired: list[float] = field(default_factory=list)  # --paired: after_i / before_i of the iterations after the 3rd


def order(round_index: int, sides: list[str]) -> list[str]:
    """The sides' order in round ``round_index``: as given in even rounds, reversed in odd ones."""
    return list(sides) if round_index % 2 == 0 else list(reversed(sides))


def summarize(rounds: list[Round], numerator: str, denominator: str) -> dict[str, float]:
    """The per-round ratios ``numerator / denominator`` of median steps (after/before of a paired round: the median
    of its per-iteration ratios): their median, min, max, half-range
    (``(max - min) / 2``), and the same median over the rounds' minimum steps."""
    ratios = [statistics.median(entry.paired) if entry.paired and (numerator, denominator) == ("after", "before")
              else entry.steps[numerator] / entry.steps[denominator] for entry in rounds]
    minimums = [entry.minimum[numerator] / entry.minimum[denominator] for entry in rounds]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "half_range": (max(ratios) - min(ratios)) / 2, "median_of_min": statistics.median(minimums),
            "rounds": float(len(ratios))}


def _env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"not NAME=VALUE: {pair!r}")
        env[name] = value
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, default=None, help="the checkout whose mindspeed_ms is 'before'")
    parser.add_argument("--before-env", action="append", default=[], help="NAME=VALUE for the before runs")
    parser.add_argument("--after-env", action="append", default=[], help="NAME=VALUE for the after runs")
    parser.add_argument("--size", default="mid", choices=sorted(bench_train.SIZES))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--paired", action="store_true", help="before and after at once, taking turns by iteration")
    parser.add_argument("--pytorch", action="store_true", help="also PyTorch in every round (after/PyTorch)")
    parser.add_argument("--reference-python", default=os.environ.get("MINDSPEED_MS_REFERENCE_PYTHON")
                        or str(bench_train.ROOT / ".venv-ref" / "bin" / "python"))
    options = parser.parse_args()
    if options.before is None and not options.before_env and not options.after_env:
        parser.error("nothing to compare: give --before and/or --before-env/--after-env")
    phases = {"BENCH_PHASES": "1"}
    configs = {"before": bench_train.Config("before", "mindspore", 1, {**phases, **_env(options.before_env)},
                                            options.size, (options.before or bench_train.ROOT).resolve()),
               "after": bench_train.Config("after", "mindspore", 1, {**phases, **_env(options.after_env)},
                                           options.size)}
    reference = os.path.abspath(options.reference_python)
    if options.pytorch:
        configs["pytorch"] = bench_train.Config("pytorch", "pytorch", 1, phases, options.size)
    rounds = []
    print(f"A/B at {options.size} ({' '.join(bench_train.SIZES[options.size])}), {options.iters} iterations a run, "
          f"medians of the steps after the third; before = {configs['before'].root} {options.before_env or ''}, "
          f"after = {bench_train.ROOT} {options.after_env or ''}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        for index in range(options.rounds):
            entry = Round()
            if options.paired:
                _paired_round(index, configs, options.iters, Path(tmp), entry)
            for side in order(index, list(configs)):
                if side in entry.steps:
                    continue
                entry.load[side] = os.getloadavg()[0]
                result = bench_train.Result()
                output, wall = bench_train.run_config(configs[side], options.iters, reference, Path(tmp))
                bench_train.parse_output(output, result, wall)
                _record(entry, side, result, result.steps_ms)
            rounds.append(entry)
            shown = "  ".join(f"{side} {entry.steps[side]:7.1f} ms (load {entry.load[side]:.1f})"
                              for side in order(index, list(configs)))
            if entry.paired:
                shown = (f"paired ({order(index, ['before', 'after'])[0]} first, load {entry.load['after']:.1f}): "
                         f"before {entry.steps['before']:7.1f} ms  after {entry.steps['after']:7.1f} ms"
                         + (f"  pytorch {entry.steps['pytorch']:7.1f} ms (load {entry.load['pytorch']:.1f})"
                            if "pytorch" in entry.steps else ""))
            extra = (f"  after/PyTorch {entry.steps['after'] / entry.steps['pytorch']:.3f}"
                     if "pytorch" in configs else "")
            ratio = statistics.median(entry.paired) if entry.paired else entry.steps["after"] / entry.steps["before"]
            if entry.paired:
                print(f"  per iteration after/before: {' '.join(f'{value:.2f}' for value in entry.paired)}")
            print(f"round {index + 1}: {shown}  after/before {ratio:.3f}"
                  f"{extra}", flush=True)
    _print_summary(rounds, "after", "before")
    if options.pytorch:
        _print_summary(rounds, "after", "pytorch")
        _print_summary(rounds, "before", "pytorch")
    same = all(entry.losses["after"] == entry.losses["before"] for entry in rounds)
    print(f"losses before and after identical in every round: {same}"
          + ("" if same else f" (last: {rounds[-1].losses['before'][-1:]} vs {rounds[-1].losses['after'][-1:]})"))


def _record(entry: Round, side: str, result: bench_train.Result, steps: list[float]) -> None:
    entry.steps[side] = statistics.median(steps)
    entry.minimum[side] = min(steps)
    entry.losses[side] = result.losses


def _paired_round(index: int, configs: dict[str, bench_train.Config], iters: int, scratch: Path, entry: Round
                  ) -> None:
    """Run before and after at once, taking turns by iteration (the first alternating by round)."""
    fifos = {side: scratch / f"baton-{index}-{side}" for side in ("before", "after")}
    for path in fifos.values():
        os.mkfifo(path)
    held = {side: os.open(path, os.O_RDWR) for side, path in fifos.items()}  # keeps an unread byte in the pipe
    try:
        first = order(index, ["before", "after"])[0]
        os.write(held[first], b"x")
        entry.load["before"] = entry.load["after"] = os.getloadavg()[0]
        started = {}
        for side, other in (("before", "after"), ("after", "before")):
            started[side] = bench_train.launch(configs[side], iters, None, scratch,
                                               {"BENCH_BATON": f"{fifos[side]}:{fifos[other]}"})
        outputs = {}
        for side in order(index, ["before", "after"]):
            try:
                outputs[side] = bench_train.collect(configs[side], *started[side])[0]
            except SystemExit:
                for other in started:  # the other side would wait for its turn forever
                    os.write(held[other], b"x" * (iters + 1))
                raise
    finally:
        for fd in held.values():
            os.close(fd)
    times = {}
    for side, output in outputs.items():
        result = bench_train.Result()
        bench_train.parse_output(output, result, 0.0)
        # by iteration: msrun's output and rank 0's log both hold the lines
        found = {int(index): float(value)
                 for index, value in re.findall(r"^bench: step (\d+) ([0-9.]+)$", output, re.MULTILINE)}
        times[side] = [found[index] for index in sorted(found)][3:-1]
        _record(entry, side, result, times[side])
    entry.paired = [after / before for after, before in zip(times["after"], times["before"])]


def _print_summary(rounds: list[Round], numerator: str, denominator: str) -> None:
    found = summarize(rounds, numerator, denominator)
    loads = [load for entry in rounds for load in entry.load.values()]
    print(f"{numerator}/{denominator} over {len(rounds)} rounds: median {found['median']:.3f} "
          f"(min {found['min']:.3f}, max {found['max']:.3f}, half-range {found['half_range']:.3f}); "
          f"of the rounds' minimum steps: median {found['median_of_min']:.3f}; load {min(loads):.1f}-{max(loads):.1f}")


if __name__ == "__main__":
    main()
