"""Sweep PyTorch's own OpInfo samples over the ops the field calls: our backend against real PyTorch.

    .venv/bin/python scripts/opinfo_sweep.py [--max N] [--json REPORT] [OPINFO_NAME ...]

The reference interpreter (``.venv-ref``, needs ``expecttest``) materialises the samples
(``tests/conformance/opinfo_samples.py``); both sides replay the same serialised samples through the same callable
(``tests/conformance/opinfo_replay.py``); the outcomes are compared with the conformance harness's rules and
tolerances (``conformance.driver.compare``). Prints, per op (most field calls first): samples, agree, diverge,
loud (our typed error), and each divergence with its bucket; exits 1 when a divergence is not listed in
``KNOWN_OPINFO`` of ``tests/conformance/known.py``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import pickle
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conformance.driver import compare  # noqa: E402
from conformance.known import KNOWN_OPINFO  # noqa: E402

SAMPLES = ROOT / "tests" / "conformance" / "opinfo_samples.py"
REPLAY = ROOT / "tests" / "conformance" / "opinfo_replay.py"
KNOWN_FILE = ROOT / "tests" / "conformance" / "known_opinfo.py"


def _env() -> dict[str, str]:
    return dict(os.environ, GLOG_v="3", PYTHONPATH=str(ROOT))


def materialise(reference_python: str, out: Path, names: list[str], limit: int) -> dict[str, Any]:
    done = subprocess.run([reference_python, str(SAMPLES), str(out), str(limit), *names], cwd=ROOT, env=_env(),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"materialising the OpInfo samples failed:\n{done.stderr[-4000:]}")
    with out.open("rb") as handle:
        loaded: dict[str, Any] = pickle.load(handle)
    return loaded


def start_side(python: str, side: str, records: Path, out: Path, start: int) -> subprocess.Popen:
    return subprocess.Popen([python, str(REPLAY), side, str(records), str(out), str(start)], cwd=ROOT, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finish_side(process: subprocess.Popen, python: str, side: str, records_path: Path, records: list[dict],
                out: Path) -> dict[str, Any]:
    """Wait for ``process``; after a crash (or an autograd-poisoning record) go on in a fresh interpreter."""
    outcomes: dict[str, Any] = {}
    while True:
        _, stderr = process.communicate()
        outcomes.update(_read(out))
        if process.returncode == 0:
            return outcomes
        position = int(Path(f"{out}.current").read_text())
        record_id = records[position]["id"]
        if record_id not in outcomes:
            outcomes[record_id] = {"ok": False, "crash": process.returncode,
                                   "error": {"type": "crash", "message": stderr[-300:], "builtins": [],
                                             "ours_typed": False}}
            with out.open("ab") as sink:
                pickle.dump((record_id, outcomes[record_id]), sink)
        if position + 1 >= len(records):
            return outcomes
        process = start_side(python, side, records_path, out, position + 1)


def _read(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if not path.exists():
        return found
    with path.open("rb") as handle:
        while True:
            try:
                record_id, outcome = pickle.load(handle)
            except EOFError:
                return found
            found[record_id] = outcome


def bucket(detail: str, ours: dict[str, Any]) -> str:
    if ours.get("crash"):
        return "crash"
    if "ours returns normally" in detail:
        return "accepts what PyTorch refuses"
    if detail.startswith("ours raises") or detail.startswith("both raise"):
        return "raises where PyTorch works" if detail.startswith("ours raises") else "other error class"
    if "['grads']" in detail:
        return "gradient"
    if "['inputs_after']" in detail or "['returns_input']" in detail or "['aliases']" in detail:
        return "in-place / aliasing"
    if ": dtype " in detail or ": shape " in detail:
        return "dtype / shape"
    return "values"


def known(record_id: str) -> str | None:
    for pattern, why in KNOWN_OPINFO.items():
        if fnmatch.fnmatchcase(record_id, pattern):
            return why
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="OpInfo names (default: every OpInfo of a field op)")
    parser.add_argument("--max", type=int, default=0, help="samples per OpInfo, dtype (default: all)")
    parser.add_argument("--json", type=Path, help="write every verdict here")
    parser.add_argument("--write-known", action="store_true",
                        help=f"rewrite {KNOWN_FILE.relative_to(ROOT)} from this run's divergences (one entry per "
                             f"OpInfo and variant) and exit 0")
    parser.add_argument("--ours", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument("--reference", default=str(ROOT / ".venv-ref" / "bin" / "python"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        records_path = Path(tmp) / "records.pkl"
        loaded = materialise(options.reference, records_path, options.names, options.max)
        records = loaded["records"]
        sides = {}
        for side, python in (("reference", options.reference), ("ours", options.ours)):
            out = Path(tmp) / f"{side}.pkl"
            sides[side] = (start_side(python, side, records_path, out, 0), python, out)
        outcomes = {side: finish_side(process, python, side, records_path, records, out)
                    for side, (process, python, out) in sides.items()}
    per_op: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    calls: dict[str, int] = {}
    failures, verdicts = [], []
    for record in records:
        reference, ours = outcomes["reference"].get(record["id"]), outcomes["ours"].get(record["id"])
        if reference is None or ours is None or reference.get("crash") or reference.get("rebuild_failed"):
            continue  # PyTorch itself could not run the replayed sample: nothing to compare
        verdict = compare(ours, reference)
        stats = per_op[record["op"]]
        calls[record["op"]] = record["calls"]
        stats["samples"] += 1
        stats[{"conformant": "agree", "loud": "loud", "divergent": "diverge"}[verdict.kind]] += 1
        entry = {"id": record["id"], "op": record["op"], "kind": verdict.kind, "detail": verdict.detail}
        if verdict.kind == "divergent":
            entry["bucket"] = bucket(verdict.detail, ours)
            entry["known"] = known(record["id"])
            if entry["known"] is None:
                failures.append(entry)
        verdicts.append(entry)
    print(f"{len({r['opinfo'] for r in records})} OpInfos, {len(per_op)} field ops, {len(verdicts)} samples "
          f"compared ({sum(loaded['skipped'].values())} not serialisable)")
    print(f"{'op':42} {'calls':>6} {'samples':>8} {'agree':>6} {'diverge':>8} {'loud':>5}")
    for op in sorted(per_op, key=lambda name: (-calls[name], name)):
        stats = per_op[op]
        print(f"{op:42} {calls[op]:6} {stats['samples']:8} {stats['agree']:6} {stats['diverge']:8} {stats['loud']:5}")
    buckets: dict[str, int] = defaultdict(int)
    for entry in verdicts:
        if entry["kind"] == "divergent":
            buckets[entry["bucket"]] += 1
            flag = "known " if entry["known"] else "NEW   "
            print(f"{flag}{entry['bucket']:28} {entry['id']}  {entry['detail'][:300]}")
    print("divergences by bucket:", dict(buckets))
    if options.json:
        options.json.write_text(json.dumps({"verdicts": verdicts, "skipped": loaded["skipped"]}, indent=1))
    if options.write_known:
        write_known([entry for entry in verdicts if entry["kind"] == "divergent"])
        return 0
    return 1 if failures else 0


def write_known(divergent: list[dict[str, Any]]) -> None:
    """Write ``KNOWN_OPINFO``: ``<opinfo>/<variant>/*`` -> its buckets, sample count and first divergence."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in divergent:
        groups[entry["id"].rsplit("/", 2)[0] + "/*"].append(entry)
    lines = ["# ruff: noqa: E501  (written by a script: one entry a line)",
             '"""Divergences of the OpInfo sweep known today (written by scripts/opinfo_sweep.py --write-known): '
             '<opinfo>/<variant>/* ->',
             'buckets, samples, the first one. Fix one: conform it or make it a loud typed error, rerun, rewrite."""',
             "", "from __future__ import annotations", "", "KNOWN_OPINFO: dict[str, str] = {"]
    for pattern in sorted(groups):
        entries = groups[pattern]
        kinds = ", ".join(sorted({entry["bucket"] for entry in entries}))
        first = entries[0]["detail"].split("\n")[0][:90]
        lines.append(f"    {pattern!r}: {f'{kinds} ({len(entries)}): {first}'!r},")
    lines.append("}")
    KNOWN_FILE.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
