"""The example side by side: MindSpore (msrun, mindspeed_ms) against PyTorch (torchrun, a CPU-torch interpreter).

Runs ``examples/pretrain_gpt.py`` for ``--iters`` iterations at tp=1 and tp=2 on both backends, and the
MindSpore runtime settings of :mod:`mindspeed_ms.runtime` one by one on top of the chosen defaults,
interleaved over ``--rounds`` rounds (the machine is shared: runs of one configuration are spread over
time). Per configuration: step time min and median (first 3 steps excluded), wall time of the launch,
peak RSS of rank 0, and the ratio to PyTorch at the same tp. Then two profiled MindSpore tp=1 runs
(5 and 5 + ``--iters`` iterations; their difference is the steps alone, setup cancels out) give the share of
the step spent in mindspeed_ms's own code.

    python benchmarks/bench_train.py [--reference-python .venv-ref/bin/python] [--rounds 2] [--iters 20]

Without a reference interpreter (``--reference-python`` or ``$MINDSPEED_MS_REFERENCE_PYTHON``, default
``.venv-ref/bin/python``) the PyTorch side is skipped and says so.
"""

from __future__ import annotations

import argparse
import os
import pstats
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "pretrain_gpt.py"
WORKER = Path(__file__).resolve().parent / "_train_worker.py"
PACKAGE = ROOT / "mindspeed_ms"


@dataclass(frozen=True)
class Config:
    """One way of running the example."""

    name: str
    backend: str  # "pytorch" or "mindspore"
    tp: int
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Result:
    """What the runs of one configuration measured."""

    steps_ms: list[float] = field(default_factory=list)  # every timed step of every round
    walls: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _command(config: Config, iters: int, reference: str | None, log_dir: Path) -> list[str]:
    args = [str(WORKER), str(EXAMPLE), "--train-iters", str(iters), "--tensor-model-parallel-size", str(config.tp)]
    if config.backend == "pytorch":
        assert reference is not None
        return [reference, "-m", "torch.distributed.run", f"--nproc-per-node={config.tp}", f"--master-port={_port()}",
                *args]
    return ["msrun", f"--worker_num={config.tp}", f"--local_worker_num={config.tp}", f"--master_port={_port()}",
            "--join=True", "--cluster_time_out=120", f"--log_dir={log_dir}", *args, "--ai-framework", "mindspore"]


def _run(config: Config, iters: int, reference: str | None, scratch: Path, extra_env: dict[str, str] | None = None
         ) -> tuple[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDSPEED_MS_") and k != "MINDSPEED_AI_FRAMEWORK"}
    env.update(GLOG_v="3", PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]), **config.env,
               **(extra_env or {}))
    log_dir = Path(tempfile.mkdtemp(dir=scratch))
    start = time.perf_counter()
    done = subprocess.run(_command(config, iters, reference, log_dir), env=env, capture_output=True, text=True,
                          timeout=1800, cwd=str(scratch))
    wall = time.perf_counter() - start
    output = done.stdout + done.stderr
    worker = log_dir / "worker_0.log"
    if worker.exists():
        output += worker.read_text(errors="replace")
    if done.returncode != 0:
        raise SystemExit(f"{config.name}: exit {done.returncode}\n{output[-3000:]}")
    return output, wall


def _parse(output: str, result: Result, wall: float) -> None:
    times = [float(x) for x in re.findall(r"elapsed time per iteration \(ms\): ([0-9.]+)", output)]
    result.steps_ms.extend(times[3:])
    result.walls.append(wall)
    rss = re.findall(r"bench: rank 0 peak RSS ([0-9.]+) MiB", output)
    result.rss_mib.extend(float(x) for x in rss[:1])
    result.losses = re.findall(r"lm loss (\S+)", output)


def _profile(iters: int, scratch: Path) -> dict[tuple[str, int, str], tuple[float, int]]:
    """Run MindSpore tp=1 under cProfile; return function -> (total time, calls)."""
    profile = scratch / f"profile{iters}"
    _run(Config("profiled", "mindspore", 1), iters, None, scratch, {"BENCH_PROFILE": str(profile)})
    stats = pstats.Stats(f"{profile}.rank0").stats  # type: ignore[attr-defined]  # pstats keeps it undocumented
    return {key: (value[2], value[1]) for key, value in stats.items()}


def _per_step_profile(scratch: Path, short: int, long: int) -> tuple[float, float, list[tuple[str, float, float]]]:
    """Profile ``short`` and ``long`` iterations; the difference divided by ``long - short`` is one step.

    Setup (imports, model build, patch application) is the same in both runs and cancels out.

    Returns:
        (mindspeed_ms's own time per step, all Python-visible time per step, the top own functions
        as (name, ms per step, calls per step)), times in seconds.
    """
    a, b = _profile(short, scratch), _profile(long, scratch)
    steps = long - short
    own = total = 0.0
    top = []
    for key, (seconds, calls) in b.items():
        before_seconds, before_calls = a.get(key, (0.0, 0))
        delta = max(seconds - before_seconds, 0.0) / steps
        total += delta
        filename, line, function = key
        if filename.startswith(str(PACKAGE)):
            own += delta
            top.append((f"{Path(filename).relative_to(ROOT)}:{line} {function}", delta, (calls - before_calls) / steps))
    top.sort(key=lambda item: -item[1])
    return own, total, top[:8]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-python", default=os.environ.get("MINDSPEED_MS_REFERENCE_PYTHON")
                        or str(ROOT / ".venv-ref" / "bin" / "python"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--no-knobs", action="store_true", help="skip the per-setting MindSpore runs")
    parser.add_argument("--profile-only", action="store_true", help="only the own-code share")
    options = parser.parse_args()
    reference = options.reference_python if os.path.exists(options.reference_python) else None
    if reference is None:
        print(f"PyTorch side skipped: no reference interpreter at {options.reference_python} "
              f"(pass --reference-python or set MINDSPEED_MS_REFERENCE_PYTHON)")

    configs = []
    for tp in (1, 2):
        if reference:
            configs.append(Config(f"pytorch tp={tp}", "pytorch", tp))
        configs.append(Config(f"mindspore tp={tp} (chosen settings)", "mindspore", tp))
        configs.append(Config(f"mindspore tp={tp} async queue (before)", "mindspore", tp,
                              {"MINDSPEED_MS_LAUNCH_BLOCKING": "0"}))
    if not options.no_knobs:
        for name, variable, value in [("dispatch_threads=1", "MINDSPEED_MS_DISPATCH_THREADS", "1"),
                                      ("dispatch_threads=2", "MINDSPEED_MS_DISPATCH_THREADS", "2"),
                                      ("cpu_op_threads=1", "MINDSPEED_MS_CPU_OP_THREADS", "1"),
                                      ("cpu_op_threads=2", "MINDSPEED_MS_CPU_OP_THREADS", "2"),
                                      ("cpu_affinity=on", "MINDSPEED_MS_CPU_AFFINITY", "1")]:
            configs.append(Config(f"mindspore tp=1 + {name}", "mindspore", 1, {variable: value}))

    if options.profile_only:
        with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
            own, total, top = _per_step_profile(Path(tmp), 5, 5 + options.iters)
        _print_profile(own, total, top, options.iters)
        return
    results = {config.name: Result() for config in configs}
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        scratch = Path(tmp)
        for round_index in range(options.rounds):
            for config in configs:
                output, wall = _run(config, options.iters, reference, scratch)
                _parse(output, results[config.name], wall)
                print(f"round {round_index + 1}: {config.name}: wall {wall:.1f}s", file=sys.stderr, flush=True)
        own, total, top = _per_step_profile(scratch, 5, 5 + options.iters)

    print(f"\nexamples/pretrain_gpt.py, {options.iters} iterations, {options.rounds} interleaved rounds "
          f"(step times exclude the first 3 steps)")
    header = f"{'configuration':<44} {'step min':>9} {'median':>9} {'wall':>7} {'RSS MiB':>8} {'vs PyTorch':>11}"
    print(header)
    print("-" * len(header))
    baselines = {config.tp: statistics.median(results[config.name].steps_ms)
                 for config in configs if config.backend == "pytorch"}
    for config in configs:
        result = results[config.name]
        median = statistics.median(result.steps_ms)
        ratio = f"{median / baselines[config.tp]:.1f}x" if config.tp in baselines else "-"
        print(f"{config.name:<44} {min(result.steps_ms):>7.1f}ms {median:>7.1f}ms "
              f"{statistics.median(result.walls):>6.1f}s {max(result.rss_mib or [0]):>8.0f} {ratio:>11}")
    chosen = {tp: statistics.median(results[f"mindspore tp={tp} (chosen settings)"].steps_ms) for tp in (1, 2)}
    before = {tp: statistics.median(results[f"mindspore tp={tp} async queue (before)"].steps_ms) for tp in (1, 2)}
    for tp in (1, 2):
        print(f"tp={tp}: synchronous launch vs async queue: {before[tp] / chosen[tp]:.1f}x faster per step")
    same = results["mindspore tp=1 (chosen settings)"].losses == results["mindspore tp=1 async queue (before)"].losses
    print(f"losses with and without the settings identical: {same}")
    _print_profile(own, total, top, options.iters)


def _print_profile(own: float, total: float, top: list[tuple[str, float, float]], iters: int) -> None:
    print(f"\nmindspeed_ms's own code per step (cProfile, tp=1, chosen settings; runs of 5 and {5 + iters} "
          f"iterations, difference per iteration): {own * 1000:.2f} ms of {total * 1000:.1f} ms = "
          f"{100 * own / total:.2f}%")
    for name, seconds, calls in top:
        print(f"  {seconds * 1000:8.3f} ms  {calls:7.1f} calls  {name}")


if __name__ == "__main__":
    main()
