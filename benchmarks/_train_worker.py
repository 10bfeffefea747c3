"""Run examples/pretrain_gpt.py as ``__main__`` and report this process's peak RSS (and a profile) at exit.

Used by bench_train.py under torchrun and msrun: ``python _train_worker.py EXAMPLE ARGS...``. With
``BENCH_PROFILE=FILE`` the whole run is profiled with cProfile and the stats are written to FILE.rank<r>.
"""

from __future__ import annotations

import os
import resource
import runpy
import sys


def _report_peak_rss() -> None:
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"bench: rank {os.environ.get('RANK', '0')} peak RSS {peak_kib / 1024:.1f} MiB", flush=True)


def main() -> None:
    example, *args = sys.argv[1:]
    sys.argv = [example, *args]
    profile_to = os.environ.get("BENCH_PROFILE")
    try:
        if profile_to:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
            try:
                runpy.run_path(example, run_name="__main__")
            finally:
                profiler.disable()
                profiler.dump_stats(f"{profile_to}.rank{os.environ.get('RANK', '0')}")
        else:
            runpy.run_path(example, run_name="__main__")
    finally:
        _report_peak_rss()


if __name__ == "__main__":
    main()
