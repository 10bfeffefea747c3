"""Call tracing reports: which patched functions a run went through, written as JSON per rank.

With ``MINDSPEED_MS_TRACE=1`` the default registry wraps each installed replacement in a counting
shim; :func:`arm_trace_report` has :func:`write_trace_report` write the counts to
``MINDSPEED_MS_TRACE_FILE`` when the process ends, also when it crashes: at exit, at an uncaught
exception (before other exit handlers run, one of which may end the process with ``os._exit``), and
on ``SIGTERM`` (what a launcher sends the other workers when one fails). Only the process that armed
it writes: a forked child (a data-loader worker) inherits the exit handlers and would otherwise
overwrite the run's report with the counts it copied at the fork. Only ``os`` is imported up front:
this module is loaded in PyTorch mode too.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from mindspeed_ms.engine.registry import PatchRegistry

__all__ = ["arm_logged_trace_report", "arm_trace_report", "current_rank", "trace_path", "write_trace_report"]


def current_rank(environ: Mapping[str, str] | None = None) -> int:
    """Return this process's rank: msrun's ``RANK_ID`` first (MSAdapter rewrites ``RANK`` from it), else ``RANK``."""
    env = os.environ if environ is None else environ
    for name in ("RANK_ID", "RANK"):
        value = (env.get(name) or "").strip()
        if value.isascii() and value.isdigit():  # isdigit() alone accepts '²', which int() rejects
            return int(value)
    return 0


def trace_path(template: str, rank: int) -> str:
    if "{rank}" in template or "{pid}" in template:
        return template.replace("{rank}", str(rank)).replace("{pid}", str(os.getpid()))
    if rank == 0:
        return template
    stem, dot, suffix = template.rpartition(".")
    return f"{stem}.rank{rank}.{suffix}" if dot and "/" not in suffix else f"{template}.rank{rank}"


def _statuses(registry: PatchRegistry) -> list[dict[str, Any]]:
    """Every patch's status as data; a patch whose status cannot be read still gives its call count."""
    try:
        return [status.to_dict() for status in registry.status()]
    except Exception:  # noqa: BLE001 - a crashing process may leave a target half torn down; report what we can
        found = []
        for patch in registry.patches():
            try:
                found.append(patch.status(registry.trace).to_dict())
            except Exception:  # noqa: BLE001 - same reason, one patch at a time
                found.append({"target": patch.target, "state": patch.state, "calls": patch.calls,
                              "replacement": None, "provider": patch.provider})
        return found


def write_trace_report(path: str, registry: PatchRegistry, *, ending: str = "exit") -> str:
    """Write the call-tracing report (which patched functions were called, how often) as JSON.

    Args:
        path: the file; ``{rank}`` and ``{pid}`` are substituted, and ranks other than 0 get
            ``.rankN`` before the suffix when neither is present.
        registry: the registry to report on.
        ending: how the process is ending (``"exit"``, ``"exception: TypeError: ..."``,
            ``"signal: SIGTERM"``), recorded as ``"ending"``.

    Returns:
        The path written.
    """
    import json

    statuses = _statuses(registry)
    called = sorted((s for s in statuses if s.get("calls")), key=lambda s: (-(s["calls"] or 0), s["target"]))
    data = {
        "registry": registry.name, "rank": current_rank(), "pid": os.getpid(), "traced": registry.trace,
        "ending": ending,
        "called": [{"target": s["target"], "calls": s["calls"], "replacement": s.get("replacement"),
                    "provider": s.get("provider")} for s in called],
        "not_called": [s["target"] for s in statuses if s.get("state") == "applied" and not s.get("calls")],
        "patches": statuses,
    }
    target = trace_path(path, current_rank())
    temporary = f"{target}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
    os.replace(temporary, target)
    return target


class _Report:
    """The armed report of this process: what to write, where, and how the process is ending."""

    def __init__(self, registry: Callable[[], PatchRegistry | None], path: Callable[[], str | None],
                 written: Callable[[str | None, BaseException | None], None]) -> None:
        import threading

        self.registry, self.path, self.written = registry, path, written
        self.pid = os.getpid()
        self.ending = "exit"
        self.lock = threading.Lock()

    def write(self, ending: str | None = None) -> None:
        if os.getpid() != self.pid:  # a forked child: the report is its parent's
            return
        with self.lock:
            self.ending = ending or self.ending
            registry, path = self.registry(), self.path()
            if registry is None or not path:
                return
            try:
                target = write_trace_report(path, registry, ending=self.ending)
            except OSError as error:
                self.written(None, error)
            else:
                self.written(target, None)


_armed: _Report | None = None


def arm_trace_report(registry: Callable[[], PatchRegistry | None], path: Callable[[], str | None],
                     written: Callable[[str | None, BaseException | None], None]) -> None:
    """Write the report when this process ends, however it ends (once per process; later calls do nothing).

    Args:
        registry: returns the registry to report on (``None``: nothing to report).
        path: returns the report's path template (``MINDSPEED_MS_TRACE_FILE``; empty: no report).
        written: called after each write with the path written, or with the ``OSError`` that stopped it.
    """
    global _armed
    if _armed is not None and _armed.pid == os.getpid():
        return
    import atexit
    import sys
    import threading

    report = _armed = _Report(registry, path, written)
    atexit.register(report.write)
    previous_hook = sys.excepthook

    def excepthook(kind: Any, value: Any, traceback: Any) -> None:
        report.write(f"exception: {kind.__name__}: {value}")
        previous_hook(kind, value, traceback)

    sys.excepthook = excepthook
    previous_thread_hook = threading.excepthook

    def thread_excepthook(args: Any) -> None:
        report.write(f"exception in thread {getattr(args.thread, 'name', '?')}: {args.exc_type.__name__}: "
                     f"{args.exc_value}")
        previous_thread_hook(args)

    threading.excepthook = thread_excepthook
    _arm_sigterm(report)


def arm_logged_trace_report(registry: Callable[[], PatchRegistry | None], path: str | None) -> None:
    """Arm :func:`arm_trace_report` with the adaptation's log lines: where each report went, or why it did not."""
    import logging

    def written(target: str | None, error: BaseException | None) -> None:
        logger = logging.getLogger("mindspeed_ms.adaptation")
        if error is not None:
            logger.error("cannot write the call-trace report to %r: %s", path, error)
        else:
            logger.info("call-trace report written to %s", target)

    arm_trace_report(registry, lambda: path, written)


def _arm_sigterm(report: _Report) -> None:
    """On SIGTERM (left at its default action by everyone else): write the report, then end as SIGTERM would.

    A Python signal handler runs only when the main thread executes Python code; a worker blocked in a
    collective would never run it. So the signal also wakes a thread (``signal.set_wakeup_fd``), which
    writes the report and ends the process at once (exit status 128 + 15, what a shell shows for SIGTERM).
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        previous_fd = signal.set_wakeup_fd(write_end)
    except ValueError:  # pragma: no cover - only off the main thread, checked above
        os.close(read_end)
        os.close(write_end)
        return
    if previous_fd != -1:  # someone (an event loop) uses the wakeup fd already: leave it to them
        signal.set_wakeup_fd(previous_fd)
        os.close(read_end)
        os.close(write_end)
        return

    def end(signum: int) -> None:
        report.write(f"signal: {signal.Signals(signum).name}")
        os._exit(128 + signum)

    def handler(signum: int, frame: Any) -> None:
        end(signum)

    def watch() -> None:
        while True:
            try:
                received = os.read(read_end, 64)
            except OSError:
                return
            if not received:
                return
            if signal.SIGTERM in received:
                if signal.getsignal(signal.SIGTERM) is handler:
                    end(signal.SIGTERM)
                # someone installed their own SIGTERM handler since: write the report, let theirs decide
                report.write("signal: SIGTERM")

    signal.signal(signal.SIGTERM, handler)
    threading.Thread(target=watch, name="mindspeed_ms-trace-sigterm", daemon=True).start()
