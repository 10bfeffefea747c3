"""The example side by side: MindSpore (msrun, mindspeed_ms) against PyTorch (torchrun, a CPU-torch interpreter).

Default: the example at each ``--sizes`` model size (tiny: hidden 64, seq 32; mid: hidden 512, seq 128;
midrope: mid with megatron's rotary embedding, as the field's configs; mid1024: hidden 1024, seq 128), tp=1, on
PyTorch (torchrun) and MindSpore (msrun), interleaved over
``--rounds`` rounds (the machine is shared: runs of one configuration are spread over time): step time min
and median (first 3 steps excluded), the ratio MindSpore/PyTorch measured in the same run, a per-phase
table (forward, backward, DDP finalize, gradient preparation, grad norm, clipping, zero count, the
optimizer's update; medians per step, timed by the worker around megatron's functions), and the share of
the step spent in mindspeed_ms's own code (cProfile: the difference of an N- and an N+``--iters``-iteration
run, so setup cancels out) and by sampling (py-spy, when installed: the samples of the main thread in the
iterations after the third, by the code they are in; see :mod:`_sampled_share`). ``--settings``: the former
matrix instead (tiny model, tp=1 and tp=2, each
MindSpore runtime setting of :mod:`mindspeed_ms.adaptation.runtime` on its own, peak RSS of rank 0).

    python benchmarks/bench_train.py [--reference-python .venv-ref/bin/python] [--rounds 2] [--iters 20]
        [--sizes tiny,mid,mid1024] [--mid-iters 10] [--settings]

Without a reference interpreter (``--reference-python`` or ``$MINDSPEED_MS_REFERENCE_PYTHON``, default
``.venv-ref/bin/python``) the PyTorch side is skipped and says so.
"""

from __future__ import annotations

import argparse
import json
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
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _sampled_share as sampled  # noqa: E402  # the sibling module: the sampled share

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
    size: str = "tiny"  # a key of SIZES
    root: Path = ROOT  # the tree whose mindspeed_ms runs (--before: an older checkout)


#: Model sizes: the example's default (tiny) and the mid sizes of issue 24 (2 layers, micro batch 4).
SIZES = {"tiny": ["--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "32"],
         "mid": ["--hidden-size", "512", "--num-attention-heads", "8", "--seq-length", "128"],
         "midrope": ["--hidden-size", "512", "--num-attention-heads", "8", "--seq-length", "128",
                     "--position-embedding-type", "rope"],
         "mid1024": ["--hidden-size", "1024", "--num-attention-heads", "16", "--seq-length", "128"]}
#: what the timed runs of each size report besides step times: the phases and their threads' scheduler counters
TIMED_ENV = {"BENCH_PHASES": "1", "BENCH_THREADS": "1"}
PHASES = ("forward", "backward", "ddp finalize", "prepare grads", "grad norm", "clip", "count zeros",
          "optimizer update", "optimizer step")


@dataclass
class Result:
    """What the runs of one configuration measured."""

    steps_ms: list[float] = field(default_factory=list)  # every timed step of every round
    walls: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)
    phases: dict[str, list[float]] = field(default_factory=dict)  # phase -> median ms of each run
    # thread ("main" or its name) -> (% of the wall on a CPU, % waiting for one) of each run, over the steady steps
    threads: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _command(config: Config, iters: int, reference: str | None, log_dir: Path) -> list[str]:
    args = [str(WORKER), str(EXAMPLE), "--train-iters", str(iters), "--tensor-model-parallel-size", str(config.tp),
            *SIZES[config.size]]
    if config.backend == "pytorch":
        assert reference is not None
        return [reference, "-m", "torch.distributed.run", f"--nproc-per-node={config.tp}", f"--master-port={_port()}",
                *args]
    return ["msrun", f"--worker_num={config.tp}", f"--local_worker_num={config.tp}", f"--master_port={_port()}",
            "--join=True", "--cluster_time_out=120", f"--log_dir={log_dir}", *args, "--ai-framework", "mindspore"]


def run_config(config: Config, iters: int, reference: str | None, scratch: Path,
               extra_env: dict[str, str] | None = None, wrap: Callable[[list[str]], list[str]] | None = None
               ) -> tuple[str, float]:
    """Run ``config`` to the end; return its output (with rank 0's log) and its wall time."""
    return collect(config, *launch(config, iters, reference, scratch, extra_env, wrap))


def launch(config: Config, iters: int, reference: str | None, scratch: Path, extra_env: dict[str, str] | None = None,
           wrap: Callable[[list[str]], list[str]] | None = None) -> tuple[subprocess.Popen[str], Path, float]:
    """Start ``config``'s run (torchrun or msrun) without waiting: the process, its log folder, its start time.
    ``wrap``: what the command runs under (a profiler's command line around it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDSPEED_MS_") and k != "MINDSPEED_AI_FRAMEWORK"}
    env.update(GLOG_v="3", PYTHONPATH=os.pathsep.join(filter(None, [str(config.root), env.get("PYTHONPATH")])),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]), **config.env,
               **(extra_env or {}))
    log_dir = Path(tempfile.mkdtemp(dir=scratch))
    command = _command(config, iters, reference, log_dir)
    process = subprocess.Popen(wrap(command) if wrap else command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, cwd=str(scratch))
    return process, log_dir, time.perf_counter()


def collect(config: Config, process: subprocess.Popen[str], log_dir: Path, start: float) -> tuple[str, float]:
    """Wait for a run :func:`launch` started; return its output (with rank 0's log) and its wall time."""
    try:
        output, _ = process.communicate(timeout=1800)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        raise SystemExit(f"{config.name}: timed out\n{output[-3000:]}") from None
    wall = time.perf_counter() - start
    worker = log_dir / "worker_0.log"
    if worker.exists():
        output += worker.read_text(errors="replace")
    if process.returncode != 0:
        raise SystemExit(f"{config.name}: exit {process.returncode}\n{output[-3000:]}")
    return output, wall


def parse_output(output: str, result: Result, wall: float) -> None:
    # by iteration: msrun's output and rank 0's log both hold the lines (read twice, the second copy's first
    # steps, with their one-time setup, were counted as timed steps)
    found = {int(index): (loss, float(ms)) for index, loss, ms in re.findall(
        r"iteration\s+(\d+)/\s*\d+ \| lm loss (\S+) \|.*?elapsed time per iteration \(ms\): ([0-9.]+)", output)}
    result.steps_ms.extend(found[index][1] for index in sorted(found)[3:])
    result.walls.append(wall)
    rss = re.findall(r"bench: rank 0 peak RSS ([0-9.]+) MiB", output)
    result.rss_mib.extend(float(x) for x in rss[:1])
    result.losses = [found[index][0] for index in sorted(found)]
    for name, value in re.findall(r"bench: phase (.+?) ([-0-9.]+)$", output, flags=re.MULTILINE):
        result.phases.setdefault(name, []).append(float(value))
    threads = re.findall(r"bench: thread (\S+) (main|other) ([0-9.]+) ([0-9.]+)$", output, flags=re.MULTILINE)
    for name, kind, on_cpu, waiting in dict.fromkeys(threads):  # msrun's output and rank 0's log: each line twice
        result.threads.setdefault("main" if kind == "main" else name, []).append((float(on_cpu), float(waiting)))


def _profile(iters: int, scratch: Path, size: str = "tiny"
             ) -> tuple[dict[tuple[str, int, str], tuple[Any, ...]], dict[str, Any]]:
    """Run MindSpore tp=1 under cProfile; return pstats' raw entries: function -> (cc, calls, self, cumulative,
    callers), and what the worker wrote of our C pass-through wrappers: {"calls": {kind: n}, "cost_s": {kind: s}}."""
    profile = scratch / f"profile{size}{iters}"
    run_config(Config("profiled", "mindspore", 1, size=size), iters, None, scratch, {"BENCH_PROFILE": str(profile)})
    stats = pstats.Stats(f"{profile}.rank0").stats  # type: ignore[attr-defined]  # undocumented
    wrappers = Path(f"{profile}.rank0.passthrough.json")
    return stats, (json.loads(wrappers.read_text()) if wrappers.exists() else {"calls": {}, "cost_s": {}})


#: mindspeed_ms's NumPy arithmetic over tensor memory, in place of MindSpore kernels: reported on its own
HOST_KERNELS = PACKAGE / "compat" / "host_kernels.py"
#: the same kind of NumPy arithmetic of the mid-size host paths (gradient norm, bias add, layer norm, softmax)
HOST_ARITHMETIC = PACKAGE / "compat" / "host_arithmetic.py"
#: and the functions of its optional C extensions (``<built-in method mindspeed_ms.compat._host_gelu.gelu_forward>``),
#: with the sum of DDP's gradient add in C (``_view_add.ViewAdd`` raises ``host_add``'s profiler events around it)
HOST_LOOPS = ("<built-in method mindspeed_ms.compat._host", "<built-in method mindspeed_ms.compat._view_add.host_add>")


def _is_framework_builtin(name: str) -> bool:
    """Whether a C function (cProfile's ``~`` entries) is MindSpore's (its ops, tensor methods, kernels): named
    after MindSpore, or an extension's function (``<function Tensor.stride at ...>``: what our wrappers hand
    on); Python's builtins, NumPy's and ctypes' functions (``<built-in ...>``, ``<method ...>``) are not."""
    return "mindspore" in name or "TensorPy" in name or "_c_expression" in name or name.startswith("<function ")


def _per_step_profile(scratch: Path, short: int, long: int, size: str = "tiny"
                      ) -> tuple[float, float, float, list[tuple[str, float, float]]]:
    """Profile ``short`` and ``long`` iterations; the difference divided by ``long - short`` is one step.

    Setup (imports, model build, patch application) is the same in both runs and cancels out: only
    functions called more often in the longer run count (a setup function's time difference is noise).

    Our own time is the self time of mindspeed_ms's functions plus the C functions they call themselves
    (cProfile books ``getattr``, ``isinstance``, ``numpy.asarray``, dict and set methods... as functions of
    their own, not in the caller's self time), except MindSpore's (its ops and tensor methods: the work our
    wrappers hand on). Python code of MindSpore/MSAdapter that ours calls is theirs. Our C pass-through wrappers
    (``mindspeed_ms.engine.passthrough``: no Python frame, so cProfile books their time to their callers) count
    as ours: their calls per step (the extension's counter) times the cost of one call, measured by the worker in
    the same run (an upper bound: the timing loop is left in).

    Returns:
        (mindspeed_ms's own Python per step, its NumPy host kernels per step (the arithmetic of
        ``compat/host_kernels.py``: work MindSpore's kernels did before; cProfile cannot see NumPy's
        ufuncs, so their time lands there), all Python-visible time per step, the top own functions as
        (name, ms per step, calls per step), the C functions our code calls first as one line), times in
        seconds.
    """
    (a, a_wrappers), (b, b_wrappers) = _profile(short, scratch, size), _profile(long, scratch, size)
    steps = long - short
    wrapper_calls = {kind: (calls - a_wrappers["calls"].get(kind, 0)) / steps
                     for kind, calls in b_wrappers["calls"].items()}
    wrappers = sum(calls * b_wrappers["cost_s"].get(kind, 0.0) for kind, calls in wrapper_calls.items())
    own = kernels = total = builtins = 0.0
    top = []
    for key, (_, calls, seconds, _, callers) in b.items():
        _, before_calls, before_seconds, _, before_callers = a.get(key, (0, 0, 0.0, 0.0, {}))
        if calls <= before_calls:
            continue
        delta = max(seconds - before_seconds, 0.0) / steps
        total += delta
        filename, line, function = key
        if filename == "~" and function.startswith(HOST_LOOPS):
            kernels += delta  # our C loops (Adam, gelu): arithmetic MindSpore's kernels did before
            continue
        if filename == "~" and not _is_framework_builtin(function):
            for caller, (_, caller_calls, caller_seconds, _) in callers.items():
                _, old_calls, old_seconds, _ = before_callers.get(caller, (0, 0, 0.0, 0.0))
                if (caller[0].startswith(str(PACKAGE)) and caller_calls > old_calls
                        and b[caller][1] > a.get(caller, (0, 0))[1]):  # the caller itself runs per step
                    share = max(caller_seconds - old_seconds, 0.0) / steps
                    if caller[0] in (str(HOST_KERNELS), str(HOST_ARITHMETIC)):
                        kernels += share
                    else:
                        builtins += share
            continue
        if filename in (str(HOST_KERNELS), str(HOST_ARITHMETIC)):
            kernels += delta
        elif filename.startswith(str(PACKAGE)):
            own += delta
        else:
            continue
        top.append((f"{Path(filename).relative_to(ROOT)}:{line} {function}", delta, (calls - before_calls) / steps))
    top.sort(key=lambda item: -item[1])
    top = top[:8]
    top.append(("C functions our code calls (getattr, isinstance, numpy.asarray, dict/set methods, ...)", builtins,
                float("nan")))
    per_call = ", ".join(f"{kind} {calls:.1f} x {1e9 * b_wrappers['cost_s'].get(kind, 0.0):.0f} ns"
                         for kind, calls in wrapper_calls.items())
    top.append((f"our C pass-through wrappers (calls per step x cost per call: {per_call or 'none'})", wrappers,
                sum(wrapper_calls.values())))
    return own + builtins + wrappers, kernels, total, top


def _sampled(scratch: Path, iters: int, size: str = "tiny") -> tuple[sampled.Share, float, float] | str:
    """Run MindSpore tp=1 under py-spy (:mod:`_sampled_share`): the steady iterations' samples by class, the
    median step time of that run (ms), how far py-spy fell behind (s); or why not (py-spy absent, or refused)."""
    py_spy = sampled.find_py_spy()
    if py_spy is None:
        return f"py-spy not installed (`{sampled.INSTALL_HINT}`): the sampled share is skipped"
    refused = sampled.can_attach(py_spy, scratch)
    if refused:
        return f"py-spy cannot attach here ({refused}): the sampled share is skipped"
    raw = scratch / f"sampled{size}{iters}.txt"
    output, _ = run_config(Config("sampled", "mindspore", 1, size=size), iters, None, scratch,
                           {"BENCH_MARK_STEPS": "1"}, lambda command: sampled.record_command(py_spy, raw, command))
    result = Result()
    parse_output(output, result, 0.0)
    return sampled.read_raw(raw.read_text()), statistics.median(result.steps_ms), sampled.behind(output)


def _print_sampled(measured: tuple[sampled.Share, float, float] | str, iters: int, size: str) -> None:
    if isinstance(measured, str):
        print(f"\n{measured}")
        return
    share, step_ms, late = measured
    own, own_error = share.fraction(sampled.OURS)
    host, host_error = share.fraction(sampled.HOST)
    print(f"\nmindspeed_ms's own code per step, {size} (sampled: py-spy --native --idle at {sampled.RATE}/s, the main "
          f"thread in iterations 4-{iters}, {share.total} samples, median step {step_ms:.1f} ms under the sampler): "
          f"ours {100 * own:.2f}% +- {100 * own_error:.2f}%; "
          f"host kernels {100 * host:.2f}% +- {100 * host_error:.2f}%; "
          f"both {100 * (own + host):.2f}%")
    for name in sampled.CLASSES:
        fraction, error = share.fraction(name)
        print(f"  {100 * fraction:6.2f}% +- {100 * error:4.2f}%  {share.samples[name]:6d} samples  {name}")
    if late:
        print(f"  py-spy fell behind its schedule by up to {late:.1f} s: samples skewed toward slow-to-sample phases")
    ours = share.samples[sampled.OURS]
    if ours:  # what our samples were doing: the interpreter on our bytecode, our C, NumPy metadata calls
        print("  ours by what it was doing: " + ", ".join(
            f"{name} {100 * share.own_kinds[name] / ours:.0f}%" for name in sampled.OWN_KINDS))
    for tag, shown in (("[ours]", 8), ("[host]", 4)):  # the innermost Python frames of our samples, by samples
        for frame, count in [item for item in share.own_frames.most_common() if item[0].endswith(tag)][:shown]:
            print(f"  {count:6d} samples  {frame}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-python", default=os.environ.get("MINDSPEED_MS_REFERENCE_PYTHON")
                        or str(ROOT / ".venv-ref" / "bin" / "python"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--sizes", default="tiny,mid",
                        help=f"model sizes compared with PyTorch, per phase (of {', '.join(SIZES)})")
    parser.add_argument("--mid-iters", type=int, default=10, help="iterations of the runs at sizes other than tiny")
    parser.add_argument("--before", type=Path, default=None,
                        help="also run MindSpore with the mindspeed_ms of this checkout, interleaved (before/after)")
    parser.add_argument("--settings", action="store_true",
                        help="instead: tp=1 and tp=2 and each MindSpore runtime setting, tiny model")
    parser.add_argument("--no-knobs", action="store_true", help="with --settings: skip the per-setting runs")
    parser.add_argument("--no-profile", action="store_true", help="skip the own-code share")
    parser.add_argument("--sample-iters", type=int, default=200,
                        help="iterations after the first 3 of the sampled runs (tiny; other sizes a tenth)")
    parser.add_argument("--profile-only", action="store_true", help="only the own-code share")
    options = parser.parse_args()
    # absolute, without resolving the venv's symlink: the runs start in a scratch directory
    reference = os.path.abspath(options.reference_python) if os.path.exists(options.reference_python) else None
    if reference is None:
        print(f"PyTorch side skipped: no reference interpreter at {options.reference_python} "
              f"(pass --reference-python or set MINDSPEED_MS_REFERENCE_PYTHON)")
    sizes = [size.strip() for size in options.sizes.split(",") if size.strip()]
    unknown = [size for size in sizes if size not in SIZES]
    if unknown:
        parser.error(f"unknown sizes {unknown}: choose from {list(SIZES)}")
    if options.profile_only:
        with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
            for size in sizes:
                iters = options.iters if size == "tiny" else options.mid_iters
                _print_profile(*_per_step_profile(Path(tmp), 3, 3 + iters, size), iters, size)
                _print_sampled(_sampled(Path(tmp), *_sample_iters(options, size)), *_sample_iters(options, size))
        return
    if options.settings:
        _settings(options, reference)
    else:
        _sizes(options, reference, sizes)


def _sizes(options: argparse.Namespace, reference: str | None, sizes: list[str]) -> None:
    """Each size on PyTorch and MindSpore (tp=1), interleaved; step times, ratios, per-phase table, own share."""
    configs = []
    for size in sizes:
        if reference:
            configs.append(Config(f"pytorch {size}", "pytorch", 1, dict(TIMED_ENV), size))
        if options.before is not None:
            configs.append(Config(f"before {size}", "mindspore", 1, dict(TIMED_ENV), size, options.before.resolve()))
        configs.append(Config(f"mindspore {size}", "mindspore", 1, dict(TIMED_ENV), size))
    results = {config.name: Result() for config in configs}
    profiles, samples = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        scratch = Path(tmp)
        for round_index in range(options.rounds):
            for config in configs:
                iters = options.iters if config.size == "tiny" else options.mid_iters
                output, wall = run_config(config, iters, reference, scratch)
                parse_output(output, results[config.name], wall)
                print(f"round {round_index + 1}: {config.name}: wall {wall:.1f}s", file=sys.stderr, flush=True)
        if not options.no_profile:
            for size in sizes:
                iters = options.iters if size == "tiny" else options.mid_iters
                profiles[size] = (_per_step_profile(scratch, 3, 3 + iters, size), iters)
                samples[size] = _sampled(scratch, *_sample_iters(options, size))
    for size in sizes:
        _print_size(size, options, results, profiles.get(size))
        if size in samples:
            _print_sampled(samples[size], _sample_iters(options, size)[0], size)


def _sample_iters(options: argparse.Namespace, size: str) -> tuple[int, str]:
    return 3 + (options.sample_iters if size == "tiny" else max(options.sample_iters // 10, 3)), size


def _print_size(size: str, options: argparse.Namespace, results: dict[str, Result],
                profile: tuple[tuple[float, float, float, list[tuple[str, float, float]]], int] | None) -> None:
    ms = results[f"mindspore {size}"]
    torch_result = results.get(f"pytorch {size}")
    before = results.get(f"before {size}")
    print(f"\n{size} ({' '.join(SIZES[size])}), tp=1, {options.rounds} interleaved rounds, step times exclude "
          f"the first 3 steps")
    rows = [("PyTorch", torch_result), ("MindSpore before", before), ("MindSpore", ms)]
    for label, result in rows:
        if result is None:
            continue
        ratio = ""
        if torch_result is not None and result is not torch_result:
            ratio = (f"  vs PyTorch {min(result.steps_ms) / min(torch_result.steps_ms):.2f}x (min) "
                     f"{statistics.median(result.steps_ms) / statistics.median(torch_result.steps_ms):.2f}x (median)")
        print(f"  {label:<17} step min {min(result.steps_ms):9.1f} ms  median "
              f"{statistics.median(result.steps_ms):9.1f} ms{ratio}")
    if before is not None:
        print(f"  losses before and after identical: {before.losses == ms.losses}"
              + ("" if before.losses == ms.losses else f" (last: {before.losses[-1:]} vs {ms.losses[-1:]})"))
    print(f"  {'phase (ms per step: median, min over runs)':<44} {'PyTorch':>9} {'before':>9} {'MindSpore':>10} "
          f"{'ratio':>7}")
    for phase in PHASES:
        values = [min(r.phases.get(phase, [float("nan")])) if r is not None else float("nan")
                  for r in (torch_result, before, ms)]
        shown = f"{values[2] / values[0]:.1f}x" if values[0] > 0.05 else "-"
        print(f"  {phase:<44} {values[0]:>9.2f} {values[1]:>9.2f} {values[2]:>10.2f} {shown:>7}")
    for label, result in rows:
        if result is not None and result.threads:
            print(f"  threads of rank 0, {label} (% of the wall of the steady steps on a CPU / waiting for one, median "
                  f"of runs): {format_threads(result.threads)}")
    if profile is not None:
        measured, iters = profile
        _print_profile(*measured, iters, size)


def format_threads(threads: dict[str, list[tuple[float, float]]]) -> str:
    """``main 96.3/3.5, ActorThread_0 59.2/40.9, ...``: each thread's medians over the runs, busiest first."""
    medians = {name: (statistics.median(on for on, _ in runs), statistics.median(wait for _, wait in runs))
               for name, runs in threads.items()}
    order = sorted(medians, key=lambda name: (name != "main", -medians[name][0]))
    return ", ".join(f"{name} {medians[name][0]:.1f}/{medians[name][1]:.1f}" for name in order)


def _settings(options: argparse.Namespace, reference: str | None) -> None:
    """The tiny model at tp=1 and tp=2, and each MindSpore runtime setting on its own."""
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
    results = {config.name: Result() for config in configs}
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        scratch = Path(tmp)
        for round_index in range(options.rounds):
            for config in configs:
                output, wall = run_config(config, options.iters, reference, scratch)
                parse_output(output, results[config.name], wall)
                print(f"round {round_index + 1}: {config.name}: wall {wall:.1f}s", file=sys.stderr, flush=True)
        profile = None if options.no_profile else _per_step_profile(scratch, 5, 5 + options.iters)

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
    if profile is not None:
        _print_profile(*profile, options.iters)


def _print_profile(own: float, kernels: float, total: float, top: list[tuple[str, float, float]], iters: int,
                   size: str = "tiny") -> None:
    print(f"\nmindspeed_ms's own code per step, {size} (cProfile, tp=1, chosen settings; runs of N and N+{iters} "
          f"iterations, difference per iteration, functions called per step): Python (with the C functions it "
          f"calls) {own * 1000:.2f} ms of {total * 1000:.1f} ms = {100 * own / total:.2f}%; NumPy host kernels "
          f"(compat/host_kernels.py and the compat/_host_* C loops, arithmetic MindSpore kernels did before) "
          f"{kernels * 1000:.2f} ms = "
          f"{100 * kernels / total:.2f}%; both {100 * (own + kernels) / total:.2f}%")
    for name, seconds, calls in top:
        shown = f"{calls:7.1f} calls" if calls == calls else " " * 13
        print(f"  {seconds * 1000:8.3f} ms  {shown}  {name}")


if __name__ == "__main__":
    main()
