"""``mindspeed-ms run -- COMMAND [ARGS...]``: COMMAND with ``mindspeed_ms.adaptor`` first in every Python process.

    mindspeed-ms run -- msrun --worker_num=2 --local_worker_num=2 --master_port=8118 --join=True \\
        pretrain_gpt.py ... --ai-framework mindspore

The exit status is the command's own (this process becomes the command); 2 when it cannot be started
(no command, not found, an unknown ``--ai-framework``). ``--dry-run`` prints what would run (``--json``
for scripts) and starts nothing.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from mindspeed_ms.adaptation.framework import FRAMEWORK_ENV, FRAMEWORKS

__all__ = ["add_arguments", "run"]

_PROG = "mindspeed-ms run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``run``'s arguments to its sub-parser."""
    parser.add_argument("--ai-framework", choices=FRAMEWORKS, default=None,
                        help=f"set {FRAMEWORK_ENV} for the command (a process's own --ai-framework flag still "
                             "wins there); default: leave the environment as it is")
    parser.add_argument("--dry-run", action="store_true", help="print the command and the environment it would "
                                                               "get, start nothing")
    parser.add_argument("--json", action="store_true", help="with --dry-run: print JSON")
    parser.add_argument("run_command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]",
                        help="the command to run, after --")


def run(options: argparse.Namespace) -> int:
    """Start the command in this process's place (never returns then); return 2 when it cannot start, 0 on a dry run."""
    from mindspeed_ms.bootstrap.launch import BOOTSTRAP_ENV, RunCommandError, execute, prepare_launch

    command = list(options.run_command)
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        launch = prepare_launch(command, framework=options.ai_framework)
    except RunCommandError as error:
        print(f"{_PROG}: error: {error}", file=sys.stderr)
        return 2
    if options.dry_run:
        if options.json:
            print(json.dumps(launch.to_dict(), indent=2))
        else:
            for key in ("PYTHONPATH", BOOTSTRAP_ENV, FRAMEWORK_ENV):
                if key in launch.env:
                    print(f"{key}={shlex.quote(launch.env[key])}")
            print(shlex.join(launch.argv))
        return 0
    if options.json:
        print(f"{_PROG}: error: --json goes with --dry-run (the command's output is its own)", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        execute(launch)
    except OSError as error:
        print(f"{_PROG}: error: cannot start {launch.executable}: {error.strerror or error}", file=sys.stderr)
        return 2
    return 0  # pragma: no cover - execute() does not return
