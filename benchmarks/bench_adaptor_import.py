"""Cost of ``import mindspeed_ms.adaptor`` in PyTorch mode, against a bare interpreter start.

Run: ``python benchmarks/bench_adaptor_import.py [--runs 40]``

Three numbers, each the median of many fresh interpreters (runs interleaved so that machine noise
hits both sides alike):

* wall time of ``python -c "import mindspeed_ms.adaptor"`` against ``python -c "pass"``, and the
  ratio of the two;
* the import itself timed inside the interpreter (``perf_counter`` around the import statement),
  which is free of process start-up noise;
* the modules the import adds to ``sys.modules`` (it must add no MindSpore, MSAdapter, torch,
  ``importlib.metadata``, ``packaging`` or ``inspect``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_IN_PROCESS = """
import json, sys, time
before = set(sys.modules)
start = time.perf_counter()
import mindspeed_ms.adaptor
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "added": sorted(set(sys.modules) - before)}))
"""

_HEAVY = ("mindspore", "msadapter", "torch", "megatron", "importlib.metadata", "packaging", "inspect", "typing")


def _wall(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="fresh interpreters per side (default 40)")
    options = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if not key.startswith("MINDSPEED_")}
    env.pop("PYTHONPATH", None)
    # An installed package runs from cached bytecode; without the cache every run would time the
    # compiler instead (this machine sets PYTHONDONTWRITEBYTECODE=1: the warm-up runs write it).
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    for _ in range(3):  # warm the file cache and the bytecode caches
        _wall("import mindspeed_ms.adaptor", env)
        _wall("pass", env)
    bare: list[float] = []
    adaptor: list[float] = []
    for _ in range(options.runs):
        bare.append(_wall("pass", env))
        adaptor.append(_wall("import mindspeed_ms.adaptor", env))
    inside: list[float] = []
    added: list[str] = []
    for _ in range(options.runs):
        completed = subprocess.run([sys.executable, "-c", _IN_PROCESS], env=env, check=True, capture_output=True,
                                   text=True)
        data = json.loads(completed.stdout)
        inside.append(data["seconds"])
        added = data["added"]

    bare_ms, adaptor_ms = statistics.median(bare) * 1e3, statistics.median(adaptor) * 1e3
    print(f"python {sys.version.split()[0]}, {options.runs} runs per side, medians")
    print(f"bare interpreter start            : {bare_ms:8.2f} ms")
    print(f"start + import mindspeed_ms.adaptor: {adaptor_ms:8.2f} ms")
    print(f"difference                         : {adaptor_ms - bare_ms:8.2f} ms")
    print(f"ratio                              : {adaptor_ms / bare_ms:8.3f}x")
    print(f"the import alone (in-process)      : {statistics.median(inside) * 1e3:8.2f} ms")
    print(f"modules added ({len(added)}): {', '.join(added)}")
    heavy = [name for name in added if name.split(".")[0] in _HEAVY or name in _HEAVY]
    print(f"heavy modules imported: {', '.join(heavy) if heavy else 'none'}")
    return 1 if heavy else 0


if __name__ == "__main__":
    sys.exit(main())
