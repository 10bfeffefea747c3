"""``mindspeed-ms convert-launch``: the command-line face of :func:`mindspeed_ms.migrate.convert.convert_script`.

Exit codes: 0 converted without findings; 1 findings remain (with ``--check``: also when anything would
change); 2 usage error or a script that does not parse (nothing is written then). The converted script
goes to stdout, ``-o OUT`` or back into the file (``--in-place``, atomically); the report of changes
and findings goes to stderr, or to stdout as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "run"]

_PROG = "mindspeed-ms convert-launch"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``convert-launch``'s arguments to its sub-parser."""
    parser.add_argument("script", metavar="SCRIPT", help="the bash launch script to convert ('-' reads stdin)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", metavar="OUT", help="write the converted script to OUT")
    where.add_argument("--in-place", action="store_true",
                       help="replace SCRIPT atomically, keeping its mode; leaves SCRIPT.bak unless --no-backup")
    parser.add_argument("--no-backup", action="store_true", help="with --in-place: do not keep SCRIPT.bak")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when anything would change or findings remain")
    parser.add_argument("--diff", action="store_true", help="print a unified diff instead of the script")
    parser.add_argument("--drop-unsupported", action="store_true",
                        help="remove flags the MindSpore backend does not support (with their values)")
    parser.add_argument("--json", action="store_true",
                        help="print the changes and findings as JSON on stdout (the script goes only to OUT)")
    parser.add_argument("--log-dir", default="msrun_log", help="msrun --log_dir added when absent (%(default)s)")
    parser.add_argument("--join", default="False", choices=("True", "False"),
                        help="msrun --join added when absent (%(default)s)")
    parser.add_argument("--cluster-time-out", default="300", metavar="SECONDS",
                        help="msrun --cluster_time_out added when absent (%(default)s)")
    parser.add_argument("--bind-core", default="True", choices=("True", "False"),
                        help="msrun --bind_core added when absent (%(default)s)")


def _usage(message: str) -> int:
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return 2


def _read(script: str) -> bytes:
    if script == "-":
        return sys.stdin.buffer.read()
    return Path(script).read_bytes()


def _write_atomic(path: Path, data: bytes, *, mode: int | None) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _diff(conversion: Any, name: str) -> str:
    before = conversion.source.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    after = conversion.output.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, fromfile=name, tofile=f"{name} (msrun)"))


def _report(conversion: Any, name: str) -> None:
    for change in conversion.changes:
        print(f"{name}:{change.line}: changed: {'; '.join(change.reasons)}", file=sys.stderr)
    for finding in conversion.findings:
        print(f"{name}:{finding.line}:{finding.column}: {finding.status}: {finding.flag}: {finding.reason}",
              file=sys.stderr)
    problems = len(conversion.problems)
    print(f"{name}: {conversion.launches} launch(es), {len(conversion.changes)} change(s), "
          f"{problems} finding(s) to resolve", file=sys.stderr)


def run(options: argparse.Namespace) -> int:
    """Run ``convert-launch``; return its exit code."""
    from mindspeed_ms.errors import LaunchScriptError
    from mindspeed_ms.migrate.convert import ConvertOptions, convert_script

    if options.check and (options.output or options.in_place):
        return _usage("--check writes nothing: drop -o/--in-place")
    if options.no_backup and not options.in_place:
        return _usage("--no-backup only goes with --in-place")
    if options.in_place and options.script == "-":
        return _usage("--in-place needs a file, not stdin")
    name = "<stdin>" if options.script == "-" else options.script
    try:
        source = _read(options.script)
    except OSError as error:
        return _usage(f"cannot read {name}: {error.strerror or error}")
    settings = ConvertOptions(log_dir=options.log_dir, join=options.join, cluster_time_out=options.cluster_time_out,
                              bind_core=options.bind_core, drop_unsupported=options.drop_unsupported)
    try:
        conversion = convert_script(source, name=name, options=settings)
    except LaunchScriptError as error:
        print(f"{_PROG}: error: {error}", file=sys.stderr)
        return 2
    if not options.check:
        try:
            _write_outputs(options, conversion)
        except OSError as error:
            return _usage(f"cannot write: {error}")
    if options.json:
        document = conversion.to_dict()
        if options.diff:
            document["diff"] = _diff(conversion, name)
        # ASCII-only JSON is valid whatever bytes the script holds (non-UTF-8 bytes arrive as \udcXX escapes)
        print(json.dumps(document, indent=2))
    else:
        if options.diff:
            sys.stdout.write(_diff(conversion, name))
        elif not (options.check or options.output or options.in_place):
            sys.stdout.buffer.write(conversion.output)
            sys.stdout.flush()
        _report(conversion, name)
    return conversion.exit_code(check=options.check)


def _write_outputs(options: argparse.Namespace, conversion: Any) -> None:
    if options.output:
        target = Path(options.output)
        mode = None if options.script == "-" else Path(options.script).stat().st_mode & 0o7777
        _write_atomic(target, conversion.output, mode=mode)
    elif options.in_place and conversion.is_changed:
        path = Path(options.script)
        mode = path.stat().st_mode & 0o7777
        if not options.no_backup:
            _write_atomic(path.with_name(path.name + ".bak"), conversion.source, mode=mode)
        _write_atomic(path, conversion.output, mode=mode)
