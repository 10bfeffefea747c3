"""Reproduce MindSpore's heap corruption at exit after a leaf's gradient is accumulated under synchronous launch.

MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1, no mindspeed_ms patch involved: with ``mindspore.runtime.launch_blocking()``
(mindspeed_ms's CPU default, MINDSPEED_MS_LAUNCH_BLOCKING) a leaf whose ``.grad`` the autograd engine accumulates
over two or more backward passes leaves the heap corrupted; glibc detects it at exit, in the static destructors of
``libmindspore_hardware_abstract.so`` (``malloc_consolidate(): unaligned fastbin chunk detected``: SIGABRT, or
SIGSEGV), after the script's own work is done and its values are right. Without launch_blocking, or with the
gradient set to None between passes (megatron's DDP hooks do that: the training loop itself does not accumulate),
the process exits 0.

    .venv/bin/python scripts/repro_exit_heap_corruption.py [--runs 3] [--no-blocking] [--set-to-none]

Runs the case in fresh child interpreters and exits 1 while any of them dies by a signal (the defect is present),
0 when all exit cleanly.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = """
import sys
import mindspore
import msadapter as torch
mindspore.set_device("CPU")
if sys.argv[1] == "1":
    mindspore.runtime.launch_blocking()
bias = torch.nn.Parameter(torch.zeros(8))
for _ in range(3):
    (torch.ones(4, 8) + bias).sum().backward()
    if sys.argv[2] == "1":
        bias.grad = None
print("values", bias.grad.asnumpy().tolist())
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-blocking", action="store_true", help="without mindspore.runtime.launch_blocking()")
    parser.add_argument("--set-to-none", action="store_true", help="the gradient set to None between passes")
    args = parser.parse_args()
    env = dict(os.environ, GLOG_v="3")
    died = 0
    for run in range(args.runs):
        done = subprocess.run([sys.executable, "-c", CHILD, "0" if args.no_blocking else "1",
                               "1" if args.set_to_none else "0"], capture_output=True, text=True, env=env)
        values = next((line for line in done.stdout.splitlines() if line.startswith("values")), "no values")
        verdict = f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
        print(f"run {run + 1}: {verdict}; {values}")
        died += done.returncode < 0
    print(f"{died} of {args.runs} runs died at exit" if died else "every run exited cleanly")
    return 1 if died else 0


if __name__ == "__main__":
    raise SystemExit(main())
