"""The ``mindspeed-ms`` command: list and verify patches, convert launch scripts, check the environment, run.

``patches`` and ``verify`` live here; ``convert-launch``, ``doctor``, ``run`` and ``parity`` live in their own
modules (:mod:`mindspeed_ms.migrate.launch_cli`, :mod:`mindspeed_ms.migrate.doctor_cli`,
:mod:`mindspeed_ms.bootstrap.cli`, :mod:`mindspeed_ms.bootstrap.parity_cli`), each exposing
``add_arguments(parser)`` and ``run(options) -> int``, imported only when that command runs (the
tree-sitter parser is not loaded for ``patches``).

A thin layer: parse, call the library, format, return an exit code (0 ok, 1 problems found, 2 usage
error). Output goes to stdout (``--json`` for scripts); diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from mindspeed_ms.adaptation.backend import prepare_backend
from mindspeed_ms.adaptation.core import Adaptation
from mindspeed_ms.adaptation.errors import FrameworkError
from mindspeed_ms.adaptation.framework import DEFAULT_FRAMEWORK
from mindspeed_ms.adaptation.log import configure_logging
from mindspeed_ms.adaptation.settings import FRAMEWORK_ENV, FRAMEWORKS, Settings
from mindspeed_ms.engine.errors import AdaptationError, SettingError

__all__ = ["main", "build_parser"]

# command -> (module with add_arguments/run, one-line help)
_MIGRATION_COMMANDS = {
    "convert-launch": ("mindspeed_ms.migrate.launch_cli",
                       "turn a torchrun launch script into an msrun one and flag features MindSpore lacks"),
    "doctor": ("mindspeed_ms.migrate.doctor_cli",
               "check Python, MindSpore, MSAdapter, CANN, NPU, megatron-core and msrun against the version table"),
    "run": ("mindspeed_ms.bootstrap.cli",
            "run a command with mindspeed_ms.adaptor imported first in every Python process it starts "
            "(msrun's and torchrun's workers, a plain python), scripts unchanged"),
    "parity": ("mindspeed_ms.bootstrap.parity_cli",
               "run a training script on PyTorch (torchrun) and on MindSpore (msrun) from the same weights and "
               "batches, and compare losses, gradients and module outputs"),
}

_COLUMNS = ("target", "kind", "state", "replacement", "provider", "registered at", "reason")


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``mindspeed-ms``."""
    parser = argparse.ArgumentParser(
        prog="mindspeed-ms", description="Inspect the patches that switch Megatron/MindSpeed code to MindSpore.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    patches = commands.add_parser("patches", help="list every patch the providers register")
    framework_help = (f"framework the providers see (default: --ai-framework among the training flags, else "
                      f"${FRAMEWORK_ENV}, else {DEFAULT_FRAMEWORK}, as for a training script)")
    patches.add_argument("--ai-framework", choices=FRAMEWORKS, default=None, help=framework_help)
    patches.add_argument("--apply", action="store_true",
                         help="apply them in this process (MindSpore mode: imports MSAdapter) and show the outcome")
    verify = commands.add_parser("verify", help="check that every registered target exists")
    verify.add_argument("--static", action="store_true",
                        help="read the installed sources instead of importing anything")
    verify.add_argument("--ai-framework", choices=FRAMEWORKS, default=None,
                        help=framework_help + "; mindspore imports MSAdapter first unless --static")
    for sub in (patches, verify):
        sub.add_argument("--json", action="store_true", help="print JSON instead of a table")
        sub.add_argument("training_args", nargs="*", metavar="-- TRAINING_ARGS",
                         help="flags of the training script, handed to the providers (after --)")
    for name, (module, summary) in _MIGRATION_COMMANDS.items():
        sub = commands.add_parser(name, help=summary, description=summary)
        importlib.import_module(module).add_arguments(sub)
    return parser


def _short(site: str | None) -> str:
    if not site:
        return ""
    cwd = os.getcwd() + os.sep
    if site.startswith(cwd):
        return site[len(cwd):]
    marker = f"site-packages{os.sep}"
    return site.split(marker, 1)[1] if marker in site else site


def _table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> str:
    widths = [max(len(row[index]) for row in [header, *rows]) for index in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _providers_line(run: Any) -> str:
    line = f"providers: {', '.join(run.registered) or 'none'}"
    if run.skipped:
        line += "; skipped: " + ", ".join(f"{item.name} ({item.reason})" for item in run.skipped)
    return line


def _patches(options: argparse.Namespace, adaptation: Adaptation) -> int:
    framework = adaptation.framework.name
    if options.apply and framework != "mindspore":
        print("mindspeed-ms patches: error: --apply applies the MindSpore patch set: use it with "
              "--ai-framework mindspore (in PyTorch mode patches are never applied)", file=sys.stderr)
        return 2
    if options.apply:
        prepare_backend()
    registry, run = adaptation.collect_patches(argv=options.training_args)
    if options.apply:
        registry.apply()
    statuses = registry.status()
    if options.json:
        print(json.dumps({"framework": framework, "applied": options.apply, "providers": run.to_dict(),
                          "patches": [status.to_dict() for status in statuses]}, indent=2))
        return 0
    rows = [(s.target, "+".join(s.kinds), s.state, s.replacement or "", s.provider or "", _short(s.registered_at),
             s.reason or ("supersedes built-in " + "; ".join(s.superseded) if s.superseded else s.purpose) or "")
            for s in statuses]
    print(_table(rows, _COLUMNS))
    print(f"\n{len(statuses)} patches, {framework} mode; {_providers_line(run)}")
    return 0


def _verify(options: argparse.Namespace, adaptation: Adaptation) -> int:
    from mindspeed_ms.adaptation.verify import verify_registry

    registry, run = adaptation.collect_patches(argv=options.training_args)
    if not options.static and adaptation.framework.name == "mindspore":
        try:
            prepare_backend()
        except ImportError as exc:
            raise ImportError(f"{exc}; or run 'mindspeed-ms verify --static', which imports nothing") from exc
    checks = verify_registry(registry, static=options.static)
    failures = [check for check in checks if check.is_failure]
    if options.json:
        print(json.dumps({"static": options.static, "ok": not failures, "providers": run.to_dict(),
                          "targets": [check.to_dict() for check in checks]}, indent=2))
    else:
        for check in checks:
            detail = f": {check.reason}" if check.reason else ""
            print(f"{check.state:<12} {check.target}{detail}")
        counts: dict[str, int] = {}
        for check in checks:
            counts[check.state] = counts.get(check.state, 0) + 1
        summary = ", ".join(f"{count} {state}" for state, count in sorted(counts.items())) or "nothing registered"
        mode = "static" if options.static else "import"
        print(f"\n{len(checks)} targets ({mode} resolution): {summary}; {_providers_line(run)}")
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mindspeed-ms``; return the exit code (0 ok, 1 problems found, 2 usage error).

    Args:
        argv: the arguments without the program name; ``sys.argv[1:]`` when None.

    Returns:
        The exit code.
    """
    parser = build_parser()
    try:
        options = parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports usage errors (exit 2) and --help (exit 0) this way
        return int(exc.code or 0)
    if options.command in _MIGRATION_COMMANDS:
        try:
            configure_logging()
        except (FrameworkError, SettingError):  # `doctor` reports a malformed environment; logging keeps INFO
            configure_logging(Settings())
        return int(importlib.import_module(_MIGRATION_COMMANDS[options.command][0]).run(options))
    # the one Adaptation of this command: the environment read once, the framework decided once
    adaptation = Adaptation(argv=options.training_args, framework=options.ai_framework)
    try:
        configure_logging(adaptation.settings)
        return _patches(options, adaptation) if options.command == "patches" else _verify(options, adaptation)
    except (FrameworkError, SettingError) as exc:
        print(f"mindspeed-ms: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `mindspeed-ms patches | head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (AdaptationError, ImportError) as exc:
        print(f"mindspeed-ms: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover - `python -m mindspeed_ms.cli`
    sys.exit(main())
