"""Lower the scheduling priority of the msrun launcher that started this worker.

MindSpore 2.7.1's msrun, with ``--join=True``, waits for its workers in a loop that polls them without
ever sleeping (``mindspore/parallel/cluster/process_entity/_api.py``, ``_ProcessManager.join_processes``):
the launcher process keeps one CPU core busy for the whole run. Measured on a 2-core machine with the
example's tiny GPT, msrun used 80% of a core while its one worker used 105% (the worker's own kernel
threads compete with it); on such a machine the spinning launcher takes the CPU the worker's
parallel kernels wait for. torchrun's agent sleeps between checks (PyTorch's side pays nothing).

The fix that keeps msrun's behaviour intact: give the launcher the lowest CPU priority (``nice`` 19)
from the worker, as ``renice -n 19 -p PPID`` would. It still notices a worker's exit at once when a
core is free, and it only yields to processes that have work to do. Only msrun is touched (the parent's
command line says ``msrun`` or ``mindspore.parallel.cluster.run``), only ever lowered; a launcher this
process may not renice (another user's) is left as it is and the log says so.

At the worker's exit its former priority is given back where the system allows it (raising a priority
needs ``CAP_SYS_NICE`` or a ``RLIMIT_NICE`` allowance): msrun's own teardown (reaping the workers,
stopping its scheduler and log tails) then does not wait behind every other process of a busy machine.
Where it is not allowed, the launcher ends at nice 19: on a saturated machine its exit then takes longer.
Only the worker that lowered the priority gives it back, and only once no other worker of the launcher
runs (their environment says ``MS_ROLE=MS_WORKER``): a worker that ends early does not hand the busy
launcher its priority back while the others still train.

msrun also starts its scheduler process (``MS_ROLE=MS_SCHED``) on the training script. It leaves the
launcher alone: a script that ends before its ``init()`` (or a scheduler that ends early) would otherwise
give the priority back under the running workers.
"""

from __future__ import annotations

import atexit
import logging
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LAUNCHER_NICE", "LauncherPriority", "is_msrun_launcher", "lower_launcher_priority",
           "other_workers", "parent_in_proc", "restore_launcher_priority"]

_log = logging.getLogger(__name__)

#: The niceness given to the launcher: the lowest priority there is.
LAUNCHER_NICE = 19
_MSRUN_SCRIPT = "msrun"
_MSRUN_MODULE = "mindspore.parallel.cluster.run"


@dataclass(frozen=True)
class LauncherPriority:
    """What :func:`lower_launcher_priority` did.

    Attributes:
        pid: the launcher's process id.
        before: its niceness before.
        after: its niceness now (``before`` when it was already at least :data:`LAUNCHER_NICE`).
        seen_as: its number in the proc file system (``pid`` unless this process runs in a PID namespace
            of its own under another namespace's ``/proc``); None: the same as ``pid``.
    """

    pid: int
    before: int
    after: int
    seen_as: int | None = None


def is_msrun_launcher(argv: list[str]) -> bool:
    """Return whether a command line (``/proc/PID/cmdline``'s arguments) is msrun's launcher.

    Args:
        argv: the program and its arguments, e.g. ``["python", "/venv/bin/msrun", "--worker_num=1", ...]``.

    Returns:
        True for ``msrun ...`` (the script, run directly or by an interpreter) and ``python -m
        mindspore.parallel.cluster.run ...``; the training script and its arguments are not looked at.
    """
    if not argv:
        return False
    if os.path.basename(argv[0]) == _MSRUN_SCRIPT:
        return True
    if not os.path.basename(argv[0]).startswith("python"):
        return False
    for index, arg in enumerate(argv[1:], start=1):  # the interpreter's options, then what it runs
        if arg == "-m":
            return argv[index + 1:index + 2] == [_MSRUN_MODULE]
        if not arg.startswith("-"):
            return os.path.basename(arg) == _MSRUN_SCRIPT
    return False


def _command_line(pid: int, proc: Path) -> list[str]:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def parent_in_proc(proc: Path = Path("/proc")) -> int | None:
    """Return this process's parent as ``proc`` numbers it (``/proc/self/stat``'s fourth field), or None.

    In a sandbox that runs its processes in their own PID namespace but shows the host's proc file system,
    ``os.getppid()`` (the namespace's number) names another process there, or none; ``proc/self`` is this
    process as that proc file system numbers it, and so is the parent it names.
    """
    try:
        stat = (proc / "self" / "stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[1])  # after "(comm) ": state, ppid, ...
    except (OSError, ValueError, IndexError):
        return None


def other_workers(launcher: int, proc: Path = Path("/proc")) -> list[int]:
    """Return the running msrun workers (``MS_ROLE=MS_WORKER``) of ``launcher`` other than this process.

    Args:
        launcher: the launcher's number in ``proc``.
        proc: the proc file system (a folder shaped like it in tests).

    Returns:
        Their numbers in ``proc``; ended processes not yet reaped (zombies) are not counted.
    """
    try:
        own = os.readlink(proc / "self")
    except OSError:
        own = str(os.getpid())
    found = []
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit() or entry.name == own:
            continue
        try:
            stat = (entry / "stat").read_text()
            state, parent = stat[stat.rindex(")") + 2:].split()[:2]
            if int(parent) != launcher or state in ("Z", "X"):
                continue
            if b"MS_ROLE=MS_WORKER" in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, ValueError):  # ended meanwhile, or not ours to read
            continue
    return sorted(found)


def restore_launcher_priority(change: LauncherPriority, proc: Path = Path("/proc")) -> bool:
    """Give the launcher the niceness it had before :func:`lower_launcher_priority` changed it.

    Nothing is given back while another worker of the launcher runs (:func:`other_workers`).

    Args:
        change: what :func:`lower_launcher_priority` returned.
        proc: the proc file system (a folder shaped like it in tests).

    Returns:
        True when the launcher has its former niceness again; False when other workers still run, the
        system does not allow raising a priority or the launcher is gone (it keeps running at nice 19).
    """
    running = other_workers(change.pid if change.seen_as is None else change.seen_as, proc)
    if running:
        _log.debug("msrun launcher %d stays at nice %d: its workers %s still run", change.pid, change.after,
                   running)
        return False
    try:
        if os.getpriority(os.PRIO_PROCESS, change.pid) == change.after:  # nobody else changed it since
            os.setpriority(os.PRIO_PROCESS, change.pid, change.before)
        return os.getpriority(os.PRIO_PROCESS, change.pid) == change.before
    except OSError as exc:
        _log.debug("msrun launcher %d stays at nice %d: %s", change.pid, change.after, exc)
        return False


def lower_launcher_priority(pid: int | None = None, proc: Path = Path("/proc"), restore_at_exit: bool = False
                            ) -> LauncherPriority | None:
    """Give the msrun launcher that is this process's parent the niceness :data:`LAUNCHER_NICE`.

    Args:
        pid: the process to check instead of the parent (``os.getppid()``; in msrun's scheduler process,
            ``MS_ROLE=MS_SCHED``, the parent is left alone).
        proc: the proc file system (a folder shaped like it in tests). The parent's command line is read
            under the number ``proc`` gives it (:func:`parent_in_proc`), the priority set on ``os.getppid()``.
        restore_at_exit: give the former priority back when this process exits
            (:func:`restore_launcher_priority`, registered with :mod:`atexit`).

    Returns:
        What changed, or ``None`` when the process is not msrun's launcher or may not be reniced
        (the reason is logged at DEBUG level).
    """
    if pid is None and os.environ.get("MS_ROLE") == "MS_SCHED":
        _log.debug("msrun's scheduler process leaves its launcher's priority to the workers")
        return None
    target = os.getppid() if pid is None else pid
    seen_as = (parent_in_proc(proc) or target) if pid is None else pid
    argv = _command_line(seen_as, proc)
    if not is_msrun_launcher(argv):
        _log.debug("parent process %d is not msrun's launcher (%s): its priority is left alone", target,
                   " ".join(argv[:3]) or "no command line")
        return None
    try:
        before = os.getpriority(os.PRIO_PROCESS, target)
        if before < LAUNCHER_NICE:
            os.setpriority(os.PRIO_PROCESS, target, LAUNCHER_NICE)
        after = os.getpriority(os.PRIO_PROCESS, target)
    except OSError as exc:  # another user's launcher, or it exited meanwhile
        _log.debug("msrun launcher %d keeps its priority: %s", target, exc)
        return None
    change = LauncherPriority(target, before, after, None if seen_as == target else seen_as)
    if restore_at_exit and after != before:
        atexit.register(restore_launcher_priority, change, proc)
    return change
