"""Run one side of a parity check and, on a timeout, end every process it started.

Launchers put their workers in sessions of their own (msrun ``os.setsid``, torchrun
``start_new_session=True``), so killing the launcher's process group leaves them running. A run's
processes are found two ways: the tree of the launcher (``/proc``'s parent links, read before anything
is killed, so no worker has been re-parented yet) and a token in the environment every process of the
run inherits (``MINDSPEED_MS_PARITY_RUN``), which also finds a process whose parent already exited.
Only processes of this user that carry this run's token or descend from its launcher are signalled.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["RUN_TOKEN_ENV", "run_with_timeout", "processes_of_run", "end_processes"]

logger = logging.getLogger(__name__)

RUN_TOKEN_ENV = "MINDSPEED_MS_PARITY_RUN"
_PROC = Path("/proc")


def _parents() -> dict[int, int]:
    """Return ``pid -> parent pid`` of every process visible in ``/proc`` (empty where there is none)."""
    parents: dict[int, int] = {}
    if not _PROC.is_dir():
        return parents
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit():
            parents[int(entry.name)] = int(fields[1])
    return parents


def _carries(pid: int, marker: bytes) -> bool:
    try:
        return marker in (_PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def processes_of_run(root: int | None, token: str | None) -> list[int]:
    """Return the live processes of a run: ``root``'s descendants and every process whose environment holds ``token``.

    Args:
        root: the launcher's process id (None: the token only, e.g. once the launcher was reaped).
        token: the value of ``MINDSPEED_MS_PARITY_RUN`` the run's processes inherited (None: the tree only).

    Returns:
        Process ids, ``root`` included while it lives, this process never.
    """
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    pending = [] if root is None else [root]
    while pending:
        pid = pending.pop()
        if pid in found:
            continue
        found.add(pid)
        pending.extend(children.get(pid, ()))
    if token:
        marker = f"{RUN_TOKEN_ENV}={token}".encode()
        found.update(pid for pid in parents if pid not in found and _carries(pid, marker))
    found.discard(os.getpid())
    return sorted(pid for pid in found if pid in parents or pid == root)


def _signal(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def end_processes(root: int | None, token: str | None, grace: float = 5.0) -> list[int]:
    """End a run: SIGTERM to all its processes, SIGKILL to what is left after ``grace`` seconds; wait until they end.

    Returns:
        The processes that were signalled.
    """
    targets = processes_of_run(root, token)
    _signal(targets, signal.SIGTERM)
    if _wait_until_ended(root, token, grace, targets):
        return targets
    left = processes_of_run(root, token)
    _signal(left, signal.SIGKILL)
    if not _wait_until_ended(root, token, 30.0, targets + left):  # a large process takes a moment to be torn down
        logger.warning("parity: processes %s still run after SIGKILL", processes_of_run(root, token))
    return sorted(set(targets) | set(left))


def _wait_until_ended(root: int | None, token: str | None, seconds: float, known: Sequence[int]) -> bool:
    # the signalled pids are watched by pid too: a process tearing down no longer shows its environment (so the
    # token no longer finds it) a moment before it is a zombie
    deadline = time.monotonic() + seconds
    while True:
        if not [pid for pid in {*processes_of_run(root, token), *known} if _is_running(pid)]:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def _is_running(pid: int) -> bool:
    """Tell whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X")


def run_with_timeout(command: Sequence[str], *, env: Mapping[str, str], cwd: str, log: Path,
                     timeout: float) -> int:
    """Run ``command`` with its output in ``log``; on a timeout end all of its processes and return 124.

    ``env`` should carry a :data:`RUN_TOKEN_ENV` unique to this run: processes that left the launcher's
    tree are found by it.

    Returns:
        The command's exit status, or 124 when it ran past ``timeout`` seconds.
    """
    token = env.get(RUN_TOKEN_ENV)
    with open(log, "w", encoding="utf-8", errors="replace") as stream:
        process = subprocess.Popen(list(command), env=dict(env), cwd=cwd, stdout=stream, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            ended = end_processes(process.pid, token)
            logger.warning("parity: %s ran past %gs: ended %d process(es) of it", command[0], timeout, len(ended))
            process.wait()
            return 124
        except BaseException:  # Ctrl-C in the caller: leave nothing running either
            end_processes(process.pid, token, grace=2.0)
            process.wait()
            raise
    if token:  # a finished run leaves nothing behind either (e.g. a worker its launcher gave up on)
        left = end_processes(None, token, grace=2.0)
        if left:
            logger.warning("parity: %s exited leaving %d process(es) running: ended them", command[0], len(left))
    return returncode
