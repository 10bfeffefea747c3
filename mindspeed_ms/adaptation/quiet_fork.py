"""Fork only while MindSpore's pool threads sleep: a forked DataLoader worker must not inherit a held lock.

MindSpore 2.7.1 runs its CPU kernels on a thread pool (``libmindspore_core.so``'s ``ThreadPool``: threads named
``ActorThread_N`` and ``KernelThread_N``). Each pool worker has a ``std::mutex`` that the worker takes on its way
into and out of its sleep and that whoever hands it a task (``Worker::Active``) takes too. ``fork`` copies only the
thread that calls it; MindSpore's child hook (``mindspore.multiprocessing.Process.run`` -> ``child_at_fork`` ->
``ThreadPool::ChildAfterFork``) gives each worker a new condition variable and a new thread, and keeps the mutex
as it was. A mutex that some pool thread held at the instant of the fork stays held in the child, by nobody: the
child's first kernel that splits its work over the pool (``ParallelLaunch`` -> ``ActiveWorkers``) waits for it
forever. That is how Megatron-LM's ``pretrain_gpt.py`` with its default ``--num-workers 2`` stopped before its
first iteration (6 of 74 runs; 0 of 40 with this hook, README): MSAdapter's ``DataLoader`` forks its
workers right after the parent's last ops, while the pool threads still spin (a pool thread spins on
``sched_yield`` for ~150 ms after its last task before it sleeps), and megatron's ``GPTDataset.__getitem__``
calls ``torch.ones`` in the worker.

A pool thread asleep (``S`` in ``/proc/self/task/TID/stat``: blocked in its condition variable's futex, which
it entered after releasing its mutex) holds nothing: the hook registered here with :func:`os.register_at_fork`
waits, before each fork of this process, until every pool thread is asleep, then lets the fork go on. Nothing
can wake them meanwhile: the thread that forks holds the GIL, and MindSpore's own before-fork hook
(``prepare_before_fork``, which ``mindspore.multiprocessing.Process.start`` runs first) has drained its op queues.
The wait is at most the threads' spin (measured ~15-150 ms for the first fork of a burst, nothing for the next),
and :data:`TIMEOUT_S` at worst: a pool kept busy by another thread does not stop the fork; the log then names
the threads still running and the child may hang as before.

``subprocess`` does not run these hooks (its child execs at once and inherits no lock anyone will take); a
process that never loaded MindSpore, or has no pool threads, forks at once.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

__all__ = ["POOL_THREAD_PREFIXES", "TIMEOUT_S", "ForkWait", "install", "installed", "last_wait", "pool_threads",
           "uninstall", "wait_for_sleeping_pool"]

logger = logging.getLogger(__name__)

#: the names MindSpore's thread pool gives its threads (``pthread_setname_np`` in ``ActorWorker``/``Worker``)
POOL_THREAD_PREFIXES = ("ActorThread_", "KernelThread_")
#: how long a fork waits for the pool at most (seconds)
TIMEOUT_S = 2.0
_POLL_S = 0.0005
_TASKS = "/proc/self/task"


@dataclass(frozen=True)
class ForkWait:
    """What one wait before a fork found.

    Attributes:
        waited_s: how long it waited.
        threads: how many pool threads the process has.
        running: the pool threads not asleep when it stopped waiting (``name:state``); empty when all slept.
    """

    waited_s: float
    threads: int
    running: tuple[str, ...]

    @property
    def quiet(self) -> bool:
        """Whether every pool thread was asleep (the fork was safe)."""
        return not self.running


def pool_threads(tasks: str = _TASKS) -> list[tuple[str, str]]:
    """Return MindSpore's pool threads of this process as ``(name, state)``, state as ``/proc`` gives it
    (``S`` asleep, ``R`` running or runnable); threads that ended while being read are left out."""
    found: list[tuple[str, str]] = []
    try:
        tids = os.listdir(tasks)
    except OSError:  # no procfs: nothing to wait for
        return found
    for tid in tids:
        try:
            with open(f"{tasks}/{tid}/comm") as comm:
                name = comm.read().strip()
            if not name.startswith(POOL_THREAD_PREFIXES):
                continue
            with open(f"{tasks}/{tid}/stat") as stat:
                state = stat.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        found.append((name, state))
    return found


def wait_for_sleeping_pool(timeout: float = TIMEOUT_S, tasks: str = _TASKS) -> ForkWait:
    """Wait until every pool thread of this process is asleep, or ``timeout`` seconds have passed.

    Returns:
        What it found (:class:`ForkWait`); the caller decides what a timeout means.
    """
    start = time.monotonic()
    while True:
        threads = pool_threads(tasks)
        running = tuple(f"{name}:{state}" for name, state in threads if state != "S")
        waited = time.monotonic() - start
        if not running or waited >= timeout:
            return ForkWait(waited, len(threads), running)
        time.sleep(_POLL_S)


_STATE: dict[str, object] = {"registered": False, "on": False, "last": None, "timeout": TIMEOUT_S}


def _before_fork() -> None:
    if not _STATE["on"]:
        return
    timeout = _STATE["timeout"]
    wait = wait_for_sleeping_pool(timeout if isinstance(timeout, float) else TIMEOUT_S)
    _STATE["last"] = wait
    if not wait.quiet:
        logger.warning("forking while MindSpore's pool threads %s still run after %.1f s: the child may hang in its "
                       "first parallel kernel (a lock held at the fork; see README, 'A hang at the first step with "
                       "forked DataLoader workers')", ", ".join(wait.running), wait.waited_s)


def install(timeout: float = TIMEOUT_S) -> None:
    """Make every later fork of this process wait for MindSpore's pool threads to sleep, ``timeout`` seconds at
    most (idempotent; the last call's timeout holds).

    :func:`os.register_at_fork` cannot take a hook back: :func:`uninstall` turns it into a no-op.

    Raises:
        ValueError: ``timeout`` is not a positive number of seconds.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"quiet_fork.install: timeout must be a positive number of seconds, got {timeout!r}")
    _STATE["timeout"] = float(timeout)
    if not _STATE["registered"]:
        os.register_at_fork(before=_before_fork)
        _STATE["registered"] = True
    _STATE["on"] = True


def uninstall() -> None:
    """Forks go on at once again (the registered hook stays, doing nothing)."""
    _STATE["on"] = False


def installed() -> bool:
    """Whether forks of this process wait for the pool."""
    return bool(_STATE["on"])


def last_wait() -> ForkWait | None:
    """What the last fork of this process waited for, or None when none waited."""
    last = _STATE["last"]
    return last if isinstance(last, ForkWait) else None
