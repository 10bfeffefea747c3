"""Read the figures of a real-entry check from Megatron's training logs and judge them (used by scripts/real_*.sh).

Usage:
  real_entry_figures.py llm --vocab V --status STATUS_JSON LOG_DIR_1_WORKER LOG_DIR_2_WORKERS
      MindSpeed-LLM's pretrain_gpt.py on 1 and on 2 workers (data parallel, same global batch): every loss
      finite, no skipped or NaN iteration, the first loss within 5% of ln(V), the two runs' losses within 1e-3
      relative at every iteration, and MindSpeed's manager adopted (registrations through
      mindspeed.patch_utils applied, read from the status written at exit with MINDSPEED_MS_TRACE_FILE).

  real_entry_figures.py field --vocab V --iterations N --status STATUS_JSON NAME LOG_DIR
      One of MindSpeed-LLM's example scripts, shrunk, with every feature flag it sets (CONFIGS of
      real_mindspeed_llm_pretrain.sh): N iterations logged, every loss finite, no skipped or NaN iteration, the
      first loss within 5% of ln(V), MindSpeed's manager adopted.

Prints one line per iteration and a verdict; exits 1 when a figure is out of tolerance or missing.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

_ITERATION = re.compile(r"iteration\s+(\d+)/\s*(\d+) \|.*?lm loss: ([^ |]+) \|.*?number of skipped iterations:\s+(\d+)"
                        r" \|\s*number of nan iterations:\s+(\d+)")
LLM_RTOL = 1e-3
FIRST_LOSS_RTOL = 0.05


def iterations(log_dir: Path) -> list[tuple[int, float, int, int]]:
    """Return ``(iteration, loss, skipped, nan)`` of every logged iteration of the run in ``log_dir``."""
    found: dict[int, tuple[int, float, int, int]] = {}
    for log in sorted(log_dir.glob("worker_*.log")):
        for line in log.read_text(errors="replace").splitlines():
            match = _ITERATION.search(line)
            if match:
                step = int(match.group(1))
                found[step] = (step, float(match.group(3)), int(match.group(4)), int(match.group(5)))
    return [found[step] for step in sorted(found)]


def _adoption(status_file: Path) -> tuple[bool, str]:
    data = json.loads(status_file.read_text())
    theirs = Counter(p["state"] for p in data["patches"] if p.get("provider") == "mindspeed.patch_utils")
    return theirs.get("applied", 0) > 0, f"registrations through MindSpeed's manager (adopted): {dict(theirs)}"


def check_llm(vocab: int, status_file: Path, single: Path, double: Path, iterations_expected: int) -> int:
    """Print and judge the MindSpeed-LLM figures; return the exit status."""
    one, two = iterations(single), iterations(double)
    problems: list[str] = []
    if len(one) != iterations_expected or len(two) != iterations_expected:
        problems.append(f"expected {iterations_expected} iterations, got {len(one)} (1 worker) and {len(two)} "
                        f"(2 workers)")
    print("iteration  loss(1 worker)  loss(2 workers)  rel.diff")
    worst = 0.0
    for (step, loss1, skip1, nan1), (_, loss2, skip2, nan2) in zip(one, two):
        diff = abs(loss1 - loss2) / abs(loss1) if loss1 else math.inf
        worst = max(worst, diff)
        print(f"{step:9d}  {loss1:14.6f}  {loss2:15.6f}  {diff:.2e}")
        if not (math.isfinite(loss1) and math.isfinite(loss2)):
            problems.append(f"iteration {step}: loss not finite")
        if skip1 or skip2 or nan1 or nan2:
            problems.append(f"iteration {step}: skipped {skip1}/{skip2}, nan {nan1}/{nan2}")
        if diff > LLM_RTOL:
            problems.append(f"iteration {step}: 1 vs 2 workers differ by {diff:.2e} > {LLM_RTOL}")
    if one:
        expected = math.log(vocab)
        first = abs(one[0][1] - expected) / expected
        print(f"first loss {one[0][1]:.6f}, ln({vocab}) = {expected:.6f}, rel. {first:.2e}")
        if first > FIRST_LOSS_RTOL:
            problems.append(f"first loss {one[0][1]} is not about ln({vocab}) = {expected:.4f}")
    print(f"largest 1 vs 2 workers relative difference: {worst:.2e} (tolerance {LLM_RTOL})")
    if status_file.exists():
        adopted, line = _adoption(status_file)
        print(line)
        if not adopted:
            problems.append("MindSpeed's manager was not adopted (no registration through mindspeed.patch_utils "
                            "applied)")
    else:
        problems.append(f"no status file {status_file}")
    for problem in problems:
        print(f"FAIL: {problem}")
    print("PASS" if not problems else "FAIL")
    return 0 if not problems else 1


def check_field(name: str, vocab: int, status_file: Path, log_dir: Path, iterations_expected: int) -> int:
    """Print and judge one shrunk example script's run; return the exit status."""
    run = iterations(log_dir)
    problems: list[str] = []
    if len(run) != iterations_expected:
        problems.append(f"{name}: expected {iterations_expected} iterations, got {len(run)}")
    print(f"{name}: iteration  loss")
    for step, loss, skipped, nan in run:
        print(f"{name}: {step:9d}  {loss:.6f}")
        if not math.isfinite(loss):
            problems.append(f"{name}: iteration {step}: loss not finite")
        if skipped or nan:
            problems.append(f"{name}: iteration {step}: skipped {skipped}, nan {nan}")
    if run:
        expected = math.log(vocab)
        first = abs(run[0][1] - expected) / expected
        print(f"{name}: first loss {run[0][1]:.6f}, ln({vocab}) = {expected:.6f}, rel. {first:.2e}")
        if first > FIRST_LOSS_RTOL:
            problems.append(f"{name}: first loss {run[0][1]} is not about ln({vocab}) = {expected:.4f}")
    if status_file.exists():
        adopted, line = _adoption(status_file)
        print(f"{name}: {line}")
        if not adopted:
            problems.append(f"{name}: MindSpeed's manager was not adopted")
    else:
        problems.append(f"{name}: no status file {status_file}")
    for problem in problems:
        print(f"FAIL: {problem}")
    print(f"{name}: {'PASS' if not problems else 'FAIL'}")
    return 0 if not problems else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="check", required=True)
    llm = sub.add_parser("llm")
    llm.add_argument("--vocab", type=int, required=True)
    llm.add_argument("--iterations", type=int, required=True)
    llm.add_argument("--status", type=Path, required=True)
    llm.add_argument("single", type=Path)
    llm.add_argument("double", type=Path)
    field = sub.add_parser("field")
    field.add_argument("--vocab", type=int, required=True)
    field.add_argument("--iterations", type=int, required=True)
    field.add_argument("--status", type=Path, required=True)
    field.add_argument("name")
    field.add_argument("log_dir", type=Path)
    options = parser.parse_args(argv)
    if options.check == "field":
        return check_field(options.name, options.vocab, options.status, options.log_dir, options.iterations)
    return check_llm(options.vocab, options.status, options.single, options.double, options.iterations)


if __name__ == "__main__":
    sys.exit(main())
