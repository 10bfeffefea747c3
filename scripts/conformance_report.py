"""Conformance with PyTorch, op by op (issue 19, item 4): run the differential suite on both sides and print the
table op -> calls in the field (per source) -> conformant / fixed by patch (which) / loud error (why) / divergent
(which cases) / not exercised, with totals and coverage by call count.

    .venv/bin/python scripts/conformance_report.py [--reference-python .venv-ref/bin/python]
        [--markdown docs/conformance.md] [--outcomes FILE.pkl] [--new-divergences]

``--outcomes`` keeps both sides' outcomes in a file and reuses it when it exists (the runs take a minute);
``--new-divergences`` prints the divergent cases that tests/conformance/known.py does not list yet, as its lines.
An op's status is the worst verdict among its cases; "fixed by patch" is a conformant op that a built-in patch
of the MindSpore mode targets (``mindspeed-ms patches --ai-framework mindspore --json``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conformance.coverage import collective_ops, coverage, inventoried_ops, load_inventory, on_path, op_status  # noqa: E402
from conformance.driver import compare, run_side  # noqa: E402
from conformance.harness import load_cases  # noqa: E402
from conformance.known import KNOWN_DIVERGENT, KNOWN_UNSTABLE  # noqa: E402

STATUSES = ("conformant", "fixed by patch", "loud", "divergent", "not exercised")


def outcomes(ours_python: str, reference_python: str, cache: Path | None) -> dict[str, dict[str, Any]]:
    ids = list(load_cases())
    if cache is not None and cache.exists():
        cached = pickle.loads(cache.read_bytes())
        if set(cached["ours"]) == set(ids):
            return cached
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        ours = pool.submit(run_side, ours_python, "ours", ids)
        reference = pool.submit(run_side, reference_python, "reference", ids)
        result = {"ours": ours.result(), "reference": reference.result()}
    if cache is not None:
        cache.write_bytes(pickle.dumps(result))
    return result


def patch_targets(ours_python: str) -> list[dict[str, Any]]:
    """The built-in patches of the MindSpore mode (target, provider, purpose)."""
    cli = Path(ours_python).parent / "mindspeed-ms"
    env = dict(os.environ, GLOG_v="3", PYTHONPATH=str(ROOT))
    done = subprocess.run([str(cli), "patches", "--ai-framework", "mindspore", "--json"], capture_output=True,
                          text=True, env=env, timeout=300, check=True)
    return [patch for patch in json.loads(done.stdout)["patches"] if patch["provider"] != "pytorch_cpu"]


def op_of_target(target: str) -> str | None:
    """The torch op a patch target implements on our side (MSAdapter's module paths differ from torch's)."""
    parts = target.split(".")
    last = parts[-1]
    if "Tensor" in parts[:-1]:
        return f"Tensor.{last}"
    if parts[0] in ("msadapter", "torch"):
        if "distributed" in parts:
            return f"torch.distributed.{last}"
        if "functional" in parts:
            return f"torch.nn.functional.{last}"
        if "cuda" in parts:
            return f"torch.cuda.{last}"
        if "optim" in parts or "nn" in parts:
            return None
        return f"torch.{last}"
    return None


def build_table(results: dict[str, dict[str, Any]], patches: list[dict[str, Any]]) -> dict[str, Any]:
    cases = load_cases()
    inventory = load_inventory()
    ops = inventoried_ops(inventory)
    by_op: dict[str, list[tuple[str, Any]]] = {}
    for case_id, case in cases.items():
        verdict = compare(results["ours"][case_id], results["reference"][case_id], case.rtol, case.atol, case.exact)
        for op in case.ops:
            by_op.setdefault(op, []).append((case_id, verdict))
    collectives = collective_ops(inventory)
    patched: dict[str, list[str]] = {}
    for patch in patches:
        op = op_of_target(patch["target"])
        if op:
            patched.setdefault(op, []).append(f"{patch['provider']}: {patch['target']}")
    rows = []
    for name, entry in ops.items():
        verdicts = by_op.get(name, [])
        kinds = [verdict.kind for _, verdict in verdicts]
        if name in collectives:  # that run's test passes only when every case conforms (or is a listed loud one)
            kinds.append("conformant")
        status = op_status(kinds)
        detail = "also compared on 2 workers (test_collectives_conformance.py); " if name in collectives else ""
        if status is None:
            status = "not exercised"
        elif status == "divergent":
            bad = [case_id for case_id, verdict in verdicts if verdict.kind == "divergent"]
            detail += f"{len(bad)}/{len(verdicts)} cases: " + ", ".join(bad[:4]) + (" ..." if len(bad) > 4 else "")
        elif status == "loud":
            detail += next(verdict.detail for _, verdict in verdicts if verdict.kind == "loud")[:160]
        elif name in patched:
            status, detail = "fixed by patch", detail + "; ".join(patched[name])
        rows.append({"op": name, "kind": entry["kind"], "calls": entry["calls"], "total": entry["total"],
                     "paths": on_path(entry), "cases": len(verdicts), "status": status,
                     "detail": detail.rstrip("; ").replace(f"{ROOT}/", "")})
    totals = {status: {"ops": sum(1 for row in rows if row["status"] == status),
                       "calls": sum(row["total"] for row in rows if row["status"] == status)} for status in STATUSES}
    share = coverage(inventory, cases.values(), also=collectives)
    divergent_cases = sorted({case_id for verdicts in by_op.values() for case_id, verdict in verdicts
                              if verdict.kind == "divergent"})
    return {"rows": rows, "totals": totals, "coverage": share, "cases": len(cases),
            "divergent_cases": divergent_cases, "sources": list(inventory["sources"]),
            "gpt_path": inventory["gpt_path"], "llm_path": inventory["llm_path"],
            "operators_excluded": coverage(inventory, cases.values(), ("function", "method"), also=collectives)}


def render_text(table: dict[str, Any]) -> str:
    lines = [f"{'op':48} {'calls':>6}  {'paths':9} {'cases':>5}  status"]
    for row in table["rows"]:
        lines.append(f"{row['op'][:48]:48} {row['total']:6}  {','.join(row['paths']) or '-':9} {row['cases']:5}  "
                     f"{row['status']}{': ' + row['detail'] if row['detail'] else ''}")
    lines.append("")
    lines.extend(_totals(table))
    return "\n".join(lines) + "\n"


def _totals(table: dict[str, Any]) -> list[str]:
    share, plain = table["coverage"], table["operators_excluded"]
    lines = [f"{status}: {t['ops']} ops, {t['calls']} calls" for status, t in table["totals"].items()]
    lines.append(f"coverage by call count: {share.share:.1%} ({share.covered_calls}/{share.total_calls} calls, "
                 f"{share.covered_ops}/{share.total_ops} ops); without operators: {plain.share:.1%}")
    lines.append(f"{table['cases']} cases, {len(table['divergent_cases'])} divergent")
    return lines


def render_markdown(table: dict[str, Any]) -> str:
    sources = table["sources"]
    out = ["# Conformance with PyTorch, op by op", "",
           "Generated by `scripts/conformance_report.py --markdown docs/conformance.md` from the differential suite "
           "(`tests/conformance`, run by `tests/test_conformance.py`) and the inventory of the field's torch calls "
           "(`tests/conformance/inventory.json`, `scripts/make_inventory.sh`). An op's status is the worst verdict "
           "of its cases: *divergent* (a different result, or an error PyTorch does not raise, or an accepted call "
           "PyTorch refuses, or a refusal under a builtin class PyTorch's does not share), *loud* (our typed error "
           "where PyTorch works), *conformant*, *fixed by patch* "
           "(conformant, and a built-in patch of the MindSpore mode implements it). Calls are static counts in "
           f"the sources ({', '.join(sources)}); method and operator counts are upper bounds (receivers' types are "
           "not known statically). Paths: `gpt` = traced while megatron-core's GPT example trains on real "
           "PyTorch; `llm` = called in a module MindSpeed-LLM's `pretrain_gpt.py` imports (static).", "",
           "## Totals", ""]
    out.extend(f"- {line}" for line in _totals(table))
    out += ["", "## Ops", "", f"| op | kind | calls | {' | '.join(sources)} | paths | cases | status | detail |",
            "|" + "---|" * (7 + len(sources))]
    for row in table["rows"]:
        detail = row["detail"].replace("|", "\\|").replace("\n", " ")
        out.append(f"| `{row['op']}` | {row['kind']} | {row['total']} | "
                   + " | ".join(str(row["calls"][s]) for s in sources)
                   + f" | {','.join(row['paths']) or '-'} | {row['cases']} | {row['status']} | {detail} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours-python", default=sys.executable)
    parser.add_argument("--reference-python", default=str(ROOT / ".venv-ref" / "bin" / "python"))
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--outcomes", type=Path)
    parser.add_argument("--new-divergences", action="store_true")
    args = parser.parse_args(argv)
    results = outcomes(args.ours_python, args.reference_python, args.outcomes)
    table = build_table(results, patch_targets(args.ours_python))
    if args.new_divergences:
        cases = load_cases()
        for case_id in table["divergent_cases"]:
            if case_id not in KNOWN_DIVERGENT and case_id not in KNOWN_UNSTABLE:
                case = cases[case_id]
                verdict = compare(results["ours"][case_id], results["reference"][case_id], case.rtol, case.atol,
                                  case.exact)
                sys.stdout.write(f"    {case_id!r}: {verdict.detail.splitlines()[0][:150]!r},\n")
        return 0
    if args.markdown:
        args.markdown.write_text(render_markdown(table))
    sys.stdout.write(render_text(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
