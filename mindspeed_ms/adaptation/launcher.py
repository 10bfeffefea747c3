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

Niceness alone does not reach the launcher where the kernel groups processes by session (Linux's
autogroups, ``/proc/sys/kernel/sched_autogroup_enabled``, on by default in most distributions' kernels):
msrun starts every worker in a session of its own (``preexec_fn=os.setsid``), so the workers and the
launcher sit in different autogroups, and the scheduler shares the CPU between the groups before it
looks at anyone's niceness. A launcher at nice 19 then still takes its group's full share: on a 2-core
machine half of it, so a worker's two-thread matrix products run at one thread's speed (measured: the
example at hidden 512, seq 128, step minimum 306-337 ms; with the launcher's group at nice 19, 196-216 ms;
with the launcher stopped outright, 191-208 ms). So the worker also gives the launcher's autogroup the
niceness 19 (``/proc/PID/autogroup``, which any process of the same user may raise to 0..19), where that
group is not the worker's own. That group is the session msrun was started from (the user's shell, a
batch script): while workers train, its other processes also yield to the workers and to every other
group. The former value comes back when the last worker that joined, of every msrun launcher of that
group, exits: the workers keep a roll of themselves under an exclusive lock
(``<tmp>/mindspeed_ms-<uid>-<autogroup>``), and whoever leaves it empty restores the value it names,
unless someone else changed the group's niceness meanwhile. A worker killed outright stays on the roll
until the next worker that edits the roll finds it dead; if none comes, the session stays at nice 19.
"""

from __future__ import annotations

import atexit
import fcntl
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LAUNCHER_NICE", "AutogroupChange", "LauncherPriority", "is_msrun_launcher", "leave_launcher_group",
           "lower_launcher_group", "lower_launcher_priority", "other_workers", "parent_in_proc", "read_autogroup",
           "restore_launcher_priority"]

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
        group: what :func:`lower_launcher_group` did to the launcher's autogroup; None: nothing (no autogroups
            here, the worker shares the launcher's, or it may not be changed).
    """

    pid: int
    before: int
    after: int
    seen_as: int | None = None
    group: AutogroupChange | None = None


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


@dataclass(frozen=True)
class AutogroupChange:
    """The launcher's autogroup, which :func:`lower_launcher_group` gave the niceness :data:`LAUNCHER_NICE`.

    Attributes:
        name: the group as ``/proc/PID/autogroup`` names it (``/autogroup-2508``).
        before: its niceness before the first worker on the roll changed it.
        roll: the file that lists the workers relying on the lowered group (see the module's notes).
        control: the launcher's ``autogroup`` file in the proc file system (written to change the group).
    """

    name: str
    before: int
    roll: Path
    control: Path


def read_autogroup(control: Path) -> tuple[str, int] | None:
    """Return a process's autogroup and its niceness from its ``/proc/PID/autogroup`` file, or None.

    Args:
        control: the file; it reads ``/autogroup-2508 nice 0``.

    Returns:
        ``("/autogroup-2508", 0)``; None where the file is absent (a kernel without autogroups, an ended
        process) or says something else.
    """
    try:
        words = control.read_text().split()
    except OSError:
        return None
    if len(words) != 3 or words[1] != "nice" or not words[0].startswith("/autogroup-"):
        return None
    try:
        return words[0], int(words[2])
    except ValueError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # somebody's process: it exists
        return True
    return True


def _edit_roll(roll: Path, edit: Callable[[int | None, list[int]], tuple[int | None, list[int]]]
               ) -> tuple[int | None, list[int]]:
    """Under the roll's exclusive lock: read (former niceness, live pids), apply ``edit``, write its result.

    A roll left empty is removed (under the lock; whoever waited on the removed file opens the roll anew).
    """
    while True:
        with open(roll, "a+", encoding="ascii") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            if os.fstat(handle.fileno()).st_nlink == 0:  # removed while this process waited for it
                continue
            handle.seek(0)
            lines = handle.read().split()
            before = int(lines[0]) if lines and lines[0].lstrip("-").isdigit() else None
            pids = [int(word) for word in lines[1:] if word.isdigit() and _alive(int(word))]
            before, pids = edit(before, pids)
            if before is None:
                roll.unlink(missing_ok=True)
            else:
                handle.seek(0)
                handle.truncate()
                handle.write("\n".join(map(str, [before, *pids])) + "\n")
            return before, pids


def lower_launcher_group(launcher: int, proc: Path = Path("/proc")) -> AutogroupChange | None:
    """Give the autogroup of msrun's launcher the niceness :data:`LAUNCHER_NICE`, where it is not this process's.

    This process goes on the group's roll (see the module's notes): :func:`leave_launcher_group` takes it off
    and gives the group its former niceness back when the roll is left empty.

    Args:
        launcher: the launcher's number in ``proc``.
        proc: the proc file system (a folder shaped like it in tests).

    Returns:
        The change (also when another worker lowered the group first), or None: no autogroups, the same
        group as this process's, or a group this process may not change (the reason is logged at DEBUG level).
    """
    control = proc / str(launcher) / "autogroup"
    theirs, own = read_autogroup(control), read_autogroup(proc / "self" / "autogroup")
    if theirs is None or own is None or theirs[0] == own[0]:
        _log.debug("msrun launcher %d: no autogroup of its own (%s, this worker's %s)", launcher, theirs, own)
        return None
    roll = Path(tempfile.gettempdir()) / f"mindspeed_ms-{os.getuid()}-{theirs[0].strip('/')}"

    def join(before: int | None, pids: list[int]) -> tuple[int | None, list[int]]:
        current = read_autogroup(control)
        if current is None:
            raise OSError(f"msrun launcher {launcher} ended")
        if not pids and (before is None or current[1] != LAUNCHER_NICE):
            before = current[1]  # the first on the roll: remember what the group has (unless the dead lowered it)
        if current[1] < LAUNCHER_NICE:
            control.write_text(f"{LAUNCHER_NICE}\n")
        return before, [*pids, os.getpid()]

    try:
        before, _ = _edit_roll(roll, join)
    except OSError as exc:  # another user's launcher, a roll we may not write, or the launcher is gone
        _log.debug("msrun launcher %d: its autogroup keeps its niceness: %s", launcher, exc)
        return None
    assert before is not None
    return AutogroupChange(theirs[0], before, roll, control)


def leave_launcher_group(change: AutogroupChange) -> bool:
    """Take this process off the roll of :func:`lower_launcher_group`; the last to leave restores the group.

    Args:
        change: what :func:`lower_launcher_group` returned.

    Returns:
        True when the group has its former niceness again; False while other workers are on the roll, or when
        the group is gone, was changed by someone else meanwhile (left as it is) or the roll cannot be read.
    """
    restored = False

    def leave(before: int | None, pids: list[int]) -> tuple[int | None, list[int]]:
        nonlocal restored
        pids = [pid for pid in pids if pid != os.getpid()]
        if pids or before is None:
            return before, pids
        current = read_autogroup(change.control)
        if current is not None and current[0] == change.name and current[1] == LAUNCHER_NICE:
            change.control.write_text(f"{before}\n")
            restored = read_autogroup(change.control) == (change.name, before)
        return None, []

    try:
        _edit_roll(change.roll, leave)
    except OSError as exc:
        _log.debug("msrun launcher group %s: not restored: %s", change.name, exc)
        return False
    return restored


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
    group = lower_launcher_group(seen_as, proc)
    change = LauncherPriority(target, before, after, None if seen_as == target else seen_as, group)
    if restore_at_exit and after != before:
        atexit.register(restore_launcher_priority, change, proc)
    if restore_at_exit and group is not None:
        atexit.register(leave_launcher_group, group)
    return change
