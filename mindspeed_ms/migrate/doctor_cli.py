"""``mindspeed-ms doctor [--json]``: the command-line face of :mod:`mindspeed_ms.migrate.doctor`.

:mod:`mindspeed_ms.cli` imports this module to build its parser for every command, so it imports
nothing heavy: the checks (and ``importlib.metadata``, ``packaging``) load inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json

__all__ = ["add_arguments", "run"]

_HEADER = ("check", "status", "found", "expected", "what to do")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``mindspeed-ms doctor`` to its sub-parser.

    Args:
        parser: the ``doctor`` sub-parser.
    """
    parser.add_argument("--json", action="store_true",
                        help='print {"ok": bool, "checks": [{name, status, found, expected, action}, ...]}')


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[index]) for row in [_HEADER, *rows]) for index in range(len(_HEADER))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [_HEADER, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def run(options: argparse.Namespace) -> int:
    """Run every check on this machine and print the table (or JSON with ``--json``).

    Args:
        options: the parsed ``doctor`` options (``json``).

    Returns:
        1 when a check failed, else 0 (warnings do not change the exit code).
    """
    from mindspeed_ms.migrate.doctor import has_failures, run_checks

    checks = run_checks()
    failed = has_failures(checks)
    if options.json:
        print(json.dumps({"ok": not failed, "checks": [check.to_dict() for check in checks]}, indent=2))
        return 1 if failed else 0
    print(_table([(c.name, c.status, c.found, c.expected, c.action) for c in checks]))
    counts = {status: sum(check.status == status for check in checks) for status in ("ok", "warn", "fail")}
    verdict = "problems found" if failed else "no failures"
    print(f"\n{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail: {verdict}")
    return 1 if failed else 0
