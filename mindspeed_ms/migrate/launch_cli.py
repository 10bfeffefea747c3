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
import stat
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
    where.add_argument("-o", "--output", metavar="OUT",
                       help="write the converted script to OUT (a symlink: to the file it points to; "
                            "FIFOs and devices are refused)")
    where.add_argument("--in-place", action="store_true",
                       help="replace SCRIPT atomically, keeping its mode (a symlink: the file it points to); "
                            "leaves SCRIPT.bak unless --no-backup")
    parser.add_argument("--no-backup", action="store_true", help="with --in-place: do not keep SCRIPT.bak")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when anything would change or findings remain")
    parser.add_argument("--diff", action="store_true", help="print a unified diff instead of the script")
    parser.add_argument("--drop-unsupported", action="store_true",
                        help="remove flags the MindSpore backend does not support (with their values)")
    parser.add_argument("--wrap-run", action="store_true",
                        help="run each msrun launch under 'mindspeed-ms run --', which imports mindspeed_ms.adaptor "
                             "first in every worker: training scripts that never import it (MindSpeed-LLM's and "
                             "Megatron-LM's pretrain_gpt.py) run unchanged")
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


def _diff(conversion: Any, name: str) -> bytes:
    """Return a unified diff of the script's bytes: lines go through as the input had them (any encoding)."""
    before = conversion.source.splitlines(keepends=True)
    after = conversion.output.splitlines(keepends=True)
    label = os.fsencode(name)
    return b"".join(difflib.diff_bytes(difflib.unified_diff, before, after, fromfile=label,
                                       tofile=label + b" (msrun)"))


def _writable_target(name: str, *, what: str) -> Path:
    """Return the regular file that writing ``name`` must replace: a symlink's target, followed to the end.

    Raises:
        _UsageError: ``name`` is a FIFO, a device, a socket or a directory (replacing it would destroy it,
            writing into it is not a file's atomic replacement).
    """
    real = Path(os.path.realpath(name))
    try:
        mode = real.stat().st_mode
    except FileNotFoundError:
        return real
    except OSError as error:
        raise _UsageError(f"cannot write {what} {name}: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
        shown = name if str(real) == os.path.abspath(name) else f"{name} (-> {real})"
        raise _UsageError(f"{what} {shown} is {kind}: convert-launch only replaces regular files "
                          "(print to stdout instead)")
    return real


class _UsageError(Exception):
    """A command line that cannot be carried out: exit 2 with this message, nothing written."""


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
    from mindspeed_ms.migrate.convert import ConvertOptions, convert_script
    from mindspeed_ms.migrate.errors import LaunchScriptError

    if options.check and (options.output or options.in_place):
        return _usage("--check writes nothing: drop -o/--in-place")
    if options.no_backup and not options.in_place:
        return _usage("--no-backup only goes with --in-place")
    if options.in_place and options.script == "-":
        return _usage("--in-place needs a file, not stdin")
    name = "<stdin>" if options.script == "-" else options.script
    try:
        settings = ConvertOptions(log_dir=options.log_dir, join=options.join,
                                  cluster_time_out=options.cluster_time_out, bind_core=options.bind_core,
                                  drop_unsupported=options.drop_unsupported, wrap_run=options.wrap_run)
    except LaunchScriptError as error:
        return _usage(str(error))
    try:
        # decided before anything is read or written: a refused target leaves everything as it was
        targets = _targets(options)
    except _UsageError as error:
        return _usage(str(error))
    try:
        source = _read(options.script)
    except OSError as error:
        return _usage(f"cannot read {name}: {error.strerror or error}")
    try:
        conversion = convert_script(source, name=name, options=settings)
    except LaunchScriptError as error:
        print(f"{_PROG}: error: {error}", file=sys.stderr)
        return 2
    if not options.check:
        try:
            _write_outputs(options, conversion, targets)
        except OSError as error:
            return _usage(f"cannot write: {error}")
    if options.json:
        document = conversion.to_dict()
        if options.diff:
            document["diff"] = _diff(conversion, name).decode("utf-8", "surrogateescape")
        # ASCII-only JSON is valid whatever bytes the script holds (non-UTF-8 bytes arrive as \udcXX escapes)
        print(json.dumps(document, indent=2))
    else:
        if options.diff:
            sys.stdout.flush()
            sys.stdout.buffer.write(_diff(conversion, name))
            sys.stdout.buffer.flush()
        elif not (options.check or options.output or options.in_place):
            sys.stdout.buffer.write(conversion.output)
            sys.stdout.flush()
        _report(conversion, name)
    return conversion.exit_code(check=options.check)


def _targets(options: argparse.Namespace) -> dict[str, Path]:
    """Return the files a run will replace (``output``, ``in_place``), symlinks followed; refuse the others."""
    targets: dict[str, Path] = {}
    if options.check:
        return targets
    if options.output:
        targets["output"] = _writable_target(options.output, what="output")
    elif options.in_place:
        real = _writable_target(options.script, what="script")
        if not real.exists():
            raise _UsageError(f"cannot read {options.script}: No such file or directory")
        targets["in_place"] = real
    return targets


def _write_outputs(options: argparse.Namespace, conversion: Any, targets: dict[str, Path]) -> None:
    if "output" in targets:
        mode = None if options.script == "-" else Path(options.script).stat().st_mode & 0o7777
        _write_atomic(targets["output"], conversion.output, mode=mode)
    elif "in_place" in targets and conversion.is_changed:
        # a symlinked script: the file it points to is converted (and backed up beside it); the link stays
        path = targets["in_place"]
        mode = path.stat().st_mode & 0o7777
        if not options.no_backup:
            _write_atomic(path.with_name(path.name + ".bak"), conversion.source, mode=mode)
        _write_atomic(path, conversion.output, mode=mode)
