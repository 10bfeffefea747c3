"""Run pretrain_gpt.py in every parallel layout and print how each compares with the one-worker run.

    PATH=.venv/bin:$PATH python examples/parallel_configs.py                # MindSpore (msrun), all layouts
    python examples/parallel_configs.py --reference-python .venv-ref/bin/python   # + the same on PyTorch
    python examples/parallel_configs.py --only dp2_ddp pp2_1f1b --iterations 20

Every layout trains the same model on the same global batches (4 micro-batches of 2 sequences per
iteration), so its per-iteration loss and grad norm must equal the one-worker run's (the MoE layouts
against MoE on one worker). The table lists workers, iterations/s, the largest relative loss and grad
norm differences against the one-worker run, how far the loss fell, and with ``--reference-python``
the largest relative loss difference against PyTorch (torchrun, gloo) running the same layout.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent / "pretrain_gpt.py"
BATCH = ["--micro-batch-size", "2", "--global-batch-size", "8"]
MOE = ["--num-experts", "4", "--moe-token-dispatcher-type", "alltoall"]
RECOMPUTE = ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]
#: name -> (workers, extra flags, the one-worker run it must equal)
CONFIGS = {
    "baseline": (1, [], "baseline"),
    "dp2_ddp": (2, [], "baseline"),
    "dp2_distributed_optimizer": (2, ["--use-distributed-optimizer"], "baseline"),
    "dp2_distopt_overlap": (2, ["--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather"],
                            "baseline"),
    "pp2_1f1b": (2, ["--pipeline-model-parallel-size", "2"], "baseline"),
    "tp2_sequence_parallel": (2, ["--tensor-model-parallel-size", "2", "--sequence-parallel"], "baseline"),
    "tp2_pp2": (4, ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2"], "baseline"),
    "recompute": (1, RECOMPUTE, "baseline"),
    "moe_ep1": (1, MOE, "moe_ep1"),
    "moe_ep2_alltoall": (2, [*MOE, "--expert-model-parallel-size", "2"], "moe_ep1"),
    "moe_tp2_sp_ep2": (4, [*MOE, "--expert-model-parallel-size", "2", "--tensor-model-parallel-size", "2",
                           "--sequence-parallel"], "moe_ep1"),
    "moe_ep2_allgather": (2, [*MOE, "--expert-model-parallel-size", "2", "--moe-token-dispatcher-type", "allgather"],
                          "moe_ep1"),
}
LINE = re.compile(r"^iteration\s+(\d+)/\s*\d+ \| lm loss (\S+) \| grad norm (\S+) \|", re.MULTILINE)
SPEED = re.compile(r"training done: \d+ iterations, ([0-9.]+) iterations/s")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def parse(text: str) -> tuple[dict[int, tuple[float, float]], float]:
    steps = {int(it): (float(loss), float(norm)) for it, loss, norm in LINE.findall(text)}
    speed = SPEED.search(text)
    return steps, float(speed.group(1)) if speed else float("nan")


def run_mindspore(workers: int, args: list[str], log_dir: Path) -> tuple[dict[int, tuple[float, float]], float]:
    env = dict(os.environ, GLOG_v="3")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    command = ["msrun", f"--worker_num={workers}", f"--local_worker_num={workers}", f"--master_port={free_port()}",
               f"--log_dir={log_dir}", "--join=True", "--cluster_time_out=120", str(EXAMPLE), *args,
               "--ai-framework", "mindspore"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800, check=False)
    log = log_dir / "worker_0.log"
    if done.returncode != 0 or not log.exists():
        raise RuntimeError(f"msrun failed ({done.returncode}); logs in {log_dir}")
    return parse(log.read_text(errors="replace"))


def run_pytorch(python: str, workers: int, args: list[str]) -> tuple[dict[int, tuple[float, float]], float]:
    command = [python, "-m", "torch.distributed.run", f"--nproc-per-node={workers}", f"--master-port={free_port()}",
               str(EXAMPLE), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"torchrun failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return parse(done.stdout)


def max_relative(got: dict[int, tuple[float, float]], want: dict[int, tuple[float, float]], index: int) -> float:
    common = sorted(set(got) & set(want))
    if not common or len(common) != len(want):
        return float("inf")
    return max(abs(got[i][index] - want[i][index]) / abs(want[i][index]) for i in common)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", nargs="+", choices=sorted(CONFIGS), help="layouts to run (default: all)")
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--reference-python", help="a Python with CPU PyTorch + megatron-core: also run torchrun")
    args = parser.parse_args(argv)
    names = args.only or list(CONFIGS)
    names = list(dict.fromkeys([CONFIGS[name][2] for name in names] + names))  # baselines first
    work = Path(tempfile.mkdtemp(prefix="parallel_configs_"))
    results: dict[str, tuple[dict[int, tuple[float, float]], float]] = {}
    rows = []
    failed = False
    for name in names:
        workers, extra, base = CONFIGS[name]
        flags = ["--train-iters", str(args.iterations), *BATCH, *extra]
        try:
            results[name] = run_mindspore(workers, flags, work / name)
        except RuntimeError as error:
            print(f"{name}: {error}", file=sys.stderr)
            failed = True
            continue
        steps, speed = results[name]
        reference = results.get(base, (steps, speed))[0]
        losses = [steps[i][0] for i in sorted(steps)]
        row = [name, str(workers), f"{speed:.2f}", f"{max_relative(steps, reference, 0):.1e}",
               f"{max_relative(steps, reference, 1):.1e}", f"{100 * (1 - losses[-1] / losses[0]):.0f}%"]
        if args.reference_python:
            try:
                torch_steps, _ = run_pytorch(args.reference_python, workers, flags)
                row.append(f"{max_relative(steps, torch_steps, 0):.1e}")
            except RuntimeError as error:
                print(f"{name} (PyTorch): {error}", file=sys.stderr)
                row.append("failed")
                failed = True
        rows.append(row)
    header = ["config", "workers", "it/s", "loss rel vs 1 worker", "grad norm rel", "loss fall"]
    if args.reference_python:
        header.append("loss rel vs PyTorch")
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for line in [header, ["-" * width for width in widths], *rows]:
        print(" | ".join(str(cell).ljust(width) for cell, width in zip(line, widths)))
    if not failed:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
