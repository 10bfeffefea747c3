"""Cost of ``mindspeed-ms run``'s bootstrap for a Python process in PyTorch mode, against a bare start.

Run: ``python benchmarks/bench_run_bootstrap.py [--runs 30] [--python PATH]``

Every Python process started under ``mindspeed-ms run`` imports the start-up ``sitecustomize`` and, through it,
``mindspeed_ms.adaptor`` (in PyTorch mode: nothing heavy). This prints the median wall time of
``python -c pass`` with and without the start-up folder on ``PYTHONPATH`` (runs interleaved so that machine
noise hits both alike), their difference and ratio, and the modules the bootstrap adds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from mindspeed_ms.bootstrap import STARTUP_DIR

_ADDED = "import json, sys; print(json.dumps(sorted(m for m in sys.modules if m.startswith('mindspeed_ms'))))"


def _wall(python: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([python, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="fresh interpreters per side (default 30)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to start (default: this one)")
    options = parser.parse_args()
    bare = {key: value for key, value in os.environ.items()
            if not key.startswith("MINDSPEED") and key not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    booted = dict(bare, PYTHONPATH=STARTUP_DIR)
    for _ in range(3):  # warm the file and bytecode caches
        _wall(options.python, bare)
        _wall(options.python, booted)
    plain, with_bootstrap = [], []
    for _ in range(options.runs):
        plain.append(_wall(options.python, bare))
        with_bootstrap.append(_wall(options.python, booted))
    a, b = statistics.median(plain), statistics.median(with_bootstrap)
    added = subprocess.run([options.python, "-c", _ADDED], env=booted, check=True, capture_output=True, text=True)
    sys.stdout.write(f"python -c pass: bare {a * 1000:.1f} ms, under the bootstrap {b * 1000:.1f} ms: "
                     f"+{(b - a) * 1000:.1f} ms ({b / a:.2f}x), median of {options.runs}\n"
                     f"modules added: {', '.join(json.loads(added.stdout))}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
