"""mindspeed_ms.adaptation.launcher: the msrun launcher that started a worker gets the lowest CPU priority."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mindspeed_ms.adaptation.launcher import (
    LAUNCHER_NICE,
    LauncherPriority,
    is_msrun_launcher,
    leave_launcher_group,
    lower_launcher_group,
    lower_launcher_priority,
    other_workers,
    parent_in_proc,
    read_autogroup,
    restore_launcher_priority,
)

#: Whether this kernel groups processes by session (then the msrun tests also check the launcher's group).
AUTOGROUPS = read_autogroup(Path("/proc/self/autogroup")) is not None


@pytest.mark.parametrize("argv", [
    ["/venv/bin/python", "/venv/bin/msrun", "--worker_num=1", "train.py"],
    ["msrun", "--worker_num=2", "--join=True", "train.py", "--ai-framework", "mindspore"],
    ["python", "-m", "mindspore.parallel.cluster.run", "--worker_num=1", "train.py"],
])
def test_msrun_command_lines_are_recognised(argv: list[str]) -> None:
    assert is_msrun_launcher(argv)


@pytest.mark.parametrize("argv", [
    [],
    ["python", "train.py", "--ai-framework", "mindspore"],
    ["python", "-m", "torch.distributed.run", "--nproc-per-node=1", "train.py"],
    ["bash", "run.sh", "msrun"],  # msrun as a later argument of another program
    ["python", "/venv/bin/mindspeed-ms", "run", "--", "python", "msrun"],
])
def test_other_command_lines_are_not_msrun(argv: list[str]) -> None:
    assert not is_msrun_launcher(argv)


@pytest.fixture()
def child() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def _fake_proc(tmp_path: Path, pid: int, *argv: str) -> Path:
    (tmp_path / str(pid)).mkdir()
    (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in argv) + b"\0")
    return tmp_path


def test_an_msrun_parent_is_given_the_lowest_priority(tmp_path: Path, child: subprocess.Popen[bytes]) -> None:
    proc = _fake_proc(tmp_path, child.pid, sys.executable, "/venv/bin/msrun", "--worker_num=1", "train.py")
    before = os.getpriority(os.PRIO_PROCESS, child.pid)
    assert before < LAUNCHER_NICE
    assert lower_launcher_priority(child.pid, proc) == LauncherPriority(child.pid, before, LAUNCHER_NICE)
    assert os.getpriority(os.PRIO_PROCESS, child.pid) == LAUNCHER_NICE
    # once more: already there, nothing changes
    assert lower_launcher_priority(child.pid, proc) == LauncherPriority(child.pid, LAUNCHER_NICE, LAUNCHER_NICE)


def test_a_parent_that_is_not_msrun_keeps_its_priority(tmp_path: Path, child: subprocess.Popen[bytes]) -> None:
    proc = _fake_proc(tmp_path, child.pid, sys.executable, "-m", "torch.distributed.run", "train.py")
    before = os.getpriority(os.PRIO_PROCESS, child.pid)
    assert lower_launcher_priority(child.pid, proc) is None
    assert os.getpriority(os.PRIO_PROCESS, child.pid) == before


def test_a_launcher_that_is_gone_is_skipped(tmp_path: Path) -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    pid = int(finished.stdout)
    proc = _fake_proc(tmp_path, pid, "msrun", "--worker_num=1", "train.py")
    assert lower_launcher_priority(pid, proc) is None
    assert lower_launcher_priority(pid + 10**7, tmp_path) is None  # no command line at all


def test_a_mindspore_worker_on_cpu_lowers_its_msrun_launcher_and_can_be_told_not_to(tmp_path: Path) -> None:
    from _helpers import msrun_command, subprocess_env

    script = tmp_path / "probe.py"
    script.write_text("import mindspeed_ms.adaptor\nimport os\n"
                      "from mindspeed_ms.adaptation.launcher import parent_in_proc\n"
                      "seen = parent_in_proc()\n"  # what the worker saw, for the message of a failure
                      "print('parent', os.getppid(), 'seen as', seen, open(f'/proc/{seen}/cmdline', 'rb').read())\n"
                      # msrun's scheduler runs this script too and ends at once: read after it is gone
                      "if os.environ.get('MS_ROLE') == 'MS_WORKER': __import__('time').sleep(2)\n"
                      "print('launcher nice', os.getpriority(os.PRIO_PROCESS, os.getppid()), flush=True)\n"
                      # read as the launcher reads it: some kernels (a sandbox's) have the file but it reads empty
                      "from pathlib import Path\n"
                      "from mindspeed_ms.adaptation.launcher import read_autogroup\n"
                      "if os.environ.get('MS_ROLE') == 'MS_WORKER':\n"
                      "    group = read_autogroup(Path(f'/proc/{seen}/autogroup'))\n"
                      "    print('launcher group', f'{group[0]} nice {group[1]}' if group else 'none', flush=True)\n")
    niceness: list[int] = []
    own_group = read_autogroup(Path("/proc/self/autogroup"))  # msrun runs in this session: this group
    for env in ({}, {"MINDSPEED_MS_QUIET_LAUNCHER": "0"}):
        log_dir = tmp_path / f"logs{len(niceness)}"
        done = subprocess.run(msrun_command(script, "--ai-framework", "mindspore", workers=1, log_dir=log_dir),
                              capture_output=True, text=True, timeout=600, cwd=str(tmp_path),
                              env=subprocess_env(drop=("MINDSPEED_",), bin_first=True, **env))
        output = done.stdout + done.stderr + (log_dir / "worker_0.log").read_text(errors="replace")
        assert done.returncode == 0, output[-3000:]
        niceness.append(int(output.split("launcher nice ")[1].split()[0]))
        group = output.split("launcher group ")[1].splitlines()[0]
        if not env:  # on by default: the worker's printout says what it saw of its parent if not
            assert niceness[0] == LAUNCHER_NICE, output[-3000:]
            # the launcher's session group yields while the worker trains (the worker has a session of its own)
            assert group == (f"{own_group[0]} nice {LAUNCHER_NICE}" if own_group else "none"), output[-3000:]
        elif own_group:
            assert group == f"{own_group[0]} nice {own_group[1]}", output[-3000:]
        # and at the end this session's group has its niceness back
        assert read_autogroup(Path("/proc/self/autogroup")) == own_group
    assert niceness[1] == os.getpriority(os.PRIO_PROCESS, 0)  # msrun kept the niceness it inherited from us


def test_the_parent_is_read_as_the_proc_file_system_numbers_it(tmp_path: Path) -> None:
    # a sandbox's own PID namespace over the host's /proc: getppid()'s number means nothing there
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "stat").write_text("4242 (python (worker) 1) S 4100 4242 4100 0 -1 4194560 0 0\n")
    assert parent_in_proc(tmp_path) == 4100
    assert parent_in_proc(tmp_path / "missing") is None
    # for real: a child's parent is this process, as /proc numbers it (also inside a PID namespace of its own)
    child = subprocess.run([sys.executable, "-c", "from mindspeed_ms.adaptation.launcher import parent_in_proc; "
                            "print(parent_in_proc())"], capture_output=True, text=True, check=True)
    assert int(child.stdout) == int(os.readlink("/proc/self"))


def test_the_former_priority_comes_back_where_the_system_allows(tmp_path: Path,
                                                                  child: subprocess.Popen[bytes]) -> None:
    proc = _fake_proc(tmp_path, child.pid, "msrun", "--worker_num=1", "train.py")
    change = lower_launcher_priority(child.pid, proc)
    assert change is not None
    assert change.after == LAUNCHER_NICE
    # raising a priority needs CAP_SYS_NICE (root here) or an RLIMIT_NICE allowance down to the former niceness
    may_raise = os.geteuid() == 0 or 20 - resource.getrlimit(resource.RLIMIT_NICE)[0] <= change.before
    assert restore_launcher_priority(change) is may_raise
    assert os.getpriority(os.PRIO_PROCESS, child.pid) == (change.before if may_raise else LAUNCHER_NICE)
    child.kill()
    child.wait()
    assert restore_launcher_priority(change) is False  # gone: nothing to give back


def _fake_process(proc: Path, pid: int, parent: int, state: str = "S", environ: bytes = b"") -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "stat").write_text(f"{pid} (python3 (x)) {state} {parent} {pid} 1 0 -1\n")
    (proc / str(pid) / "environ").write_bytes(environ)


def test_only_running_workers_of_the_launcher_count_as_other_workers(tmp_path: Path) -> None:
    worker = b"PATH=/bin\0MS_ROLE=MS_WORKER\0"
    _fake_process(tmp_path, 101, 100, environ=worker)
    _fake_process(tmp_path, 102, 100, environ=b"MS_ROLE=MS_SCHED\0")  # msrun's scheduler
    _fake_process(tmp_path, 103, 100)  # msrun's `tail -f` of the worker log
    _fake_process(tmp_path, 104, 100, state="Z", environ=worker)  # ended, not reaped yet
    _fake_process(tmp_path, 105, 999, environ=worker)  # another launcher's
    _fake_process(tmp_path, os.getpid(), 100, environ=worker)  # this process itself (no proc/self here)
    assert other_workers(100, tmp_path) == [101]
    assert other_workers(100, tmp_path / "missing") == []


def test_a_worker_gives_nothing_back_while_other_workers_still_run(tmp_path: Path,
                                                                    child: subprocess.Popen[bytes]) -> None:
    change = lower_launcher_priority(child.pid, _fake_proc(tmp_path, child.pid, "msrun", "train.py"))
    assert change is not None
    assert change.after == LAUNCHER_NICE
    _fake_process(tmp_path, 7001, child.pid, environ=b"MS_ROLE=MS_WORKER\0")
    assert restore_launcher_priority(change, tmp_path) is False
    assert os.getpriority(os.PRIO_PROCESS, child.pid) == LAUNCHER_NICE


@pytest.mark.parametrize(("role", "lowered"), [("MS_SCHED", False), ("MS_WORKER", True)])
def test_msruns_scheduler_process_leaves_the_launcher_to_the_workers(tmp_path: Path, role: str, lowered: bool) -> None:
    # a real parent ("the launcher") whose child runs as msrun's scheduler or worker; the proc file system the child
    # reads is a folder that names its real parent msrun
    child_code = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from mindspeed_ms.adaptation.launcher import lower_launcher_priority
        proc = Path({str(tmp_path)!r})
        (proc / "self").mkdir()
        (proc / "self" / "stat").write_text(f"{{os.getpid()}} (python) R {{os.getppid()}} 1 1 0\\n")
        (proc / str(os.getppid())).mkdir()
        (proc / str(os.getppid()) / "cmdline").write_bytes(b"msrun\\0--worker_num=1\\0train.py\\0")
        lower_launcher_priority(proc=proc)
    """)
    launcher_code = (f"import os, subprocess, sys; subprocess.run([sys.executable, '-c', {child_code!r}], check=True, "
                     f"env={{**os.environ, 'MS_ROLE': {role!r}}}); print(os.getpriority(os.PRIO_PROCESS, 0))")
    done = subprocess.run([sys.executable, "-c", launcher_code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout) == (LAUNCHER_NICE if lowered else os.getpriority(os.PRIO_PROCESS, 0))


def test_autogroup_files_are_read_as_the_kernel_writes_them(tmp_path: Path) -> None:
    control = tmp_path / "autogroup"
    control.write_text("/autogroup-2508 nice 0\n")
    assert read_autogroup(control) == ("/autogroup-2508", 0)
    control.write_text("/autogroup-17 nice 19\n")
    assert read_autogroup(control) == ("/autogroup-17", 19)
    for text in ("", "19\n", "/autogroup-3 nice x\n", "/sys/fs/cgroup nice 0\n"):
        control.write_text(text)
        assert read_autogroup(control) is None, text
    assert read_autogroup(tmp_path / "missing") is None


@pytest.fixture()
def session_child() -> Iterator[subprocess.Popen[bytes]]:
    """A process in a session, and so an autogroup, of its own: msrun's launcher as its workers see it."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def _group_of(pid: int) -> tuple[str, int] | None:
    return read_autogroup(Path(f"/proc/{pid}/autogroup"))


@pytest.mark.skipif(not AUTOGROUPS, reason="this kernel has no autogroups: the next test covers that case")
def test_a_launcher_in_another_autogroup_has_the_group_lowered_until_the_last_worker_leaves(
        session_child: subprocess.Popen[bytes]) -> None:
    before = _group_of(session_child.pid)
    assert before is not None
    assert before[0] != _group_of(os.getpid())[0]  # type: ignore[index]
    change = lower_launcher_group(session_child.pid)
    assert change is not None
    assert (change.name, change.before) == before
    assert _group_of(session_child.pid) == (before[0], LAUNCHER_NICE)
    assert change.roll.read_text().split() == [str(before[1]), str(os.getpid())]
    # another worker joins (a real process) and stays: leaving gives nothing back yet
    other = subprocess.Popen([sys.executable, "-c", "import sys\n"
                              "from mindspeed_ms.adaptation.launcher import lower_launcher_group\n"
                              f"print(lower_launcher_group({session_child.pid}).before, flush=True)\n"
                              "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None
        assert int(other.stdout.readline()) == before[1]  # the roll keeps the first worker's "before"
        assert leave_launcher_group(change) is False
        assert _group_of(session_child.pid) == (before[0], LAUNCHER_NICE)
        assert change.roll.read_text().split() == [str(before[1]), str(other.pid)]
    finally:
        other.kill()
        other.communicate()  # reaped, its pipes closed
    # the other worker was killed outright: whoever edits the roll next finds it dead, and the group comes back
    assert leave_launcher_group(change) is True
    assert _group_of(session_child.pid) == before
    assert not change.roll.exists()


@pytest.mark.skipif(not AUTOGROUPS, reason="this kernel has no autogroups: the next test covers that case")
def test_a_group_changed_by_someone_else_meanwhile_is_left_as_it_is(session_child: subprocess.Popen[bytes]) -> None:
    change = lower_launcher_group(session_child.pid)
    assert change is not None
    Path(f"/proc/{session_child.pid}/autogroup").write_text("7\n")  # the user reniced the session meanwhile
    assert leave_launcher_group(change) is False
    assert _group_of(session_child.pid) == (change.name, 7)
    assert not change.roll.exists()  # the roll is gone: the next worker starts afresh


def test_a_launcher_in_this_processs_group_or_without_groups_is_left_alone(tmp_path: Path,
                                                                          child: subprocess.Popen[bytes]) -> None:
    # the same session: lowering the group would lower this worker too
    before = _group_of(child.pid)
    assert lower_launcher_group(child.pid) is None
    assert _group_of(child.pid) == before
    # a kernel without autogroups (no such files): nothing to do, and nothing is written
    (tmp_path / str(child.pid)).mkdir()
    assert lower_launcher_group(child.pid, tmp_path) is None
    assert list((tmp_path / str(child.pid)).iterdir()) == []
    # lower_launcher_priority reports the group it changed: none here
    (tmp_path / "p").mkdir()
    proc = _fake_proc(tmp_path / "p", child.pid, "msrun", "train.py")
    change = lower_launcher_priority(child.pid, proc)
    assert change is not None
    assert change.group is None


@pytest.mark.skipif(not AUTOGROUPS, reason="this kernel has no autogroups: the next test covers that case")
def test_workers_joining_and_leaving_at_once_leave_the_group_as_it_was(session_child: subprocess.Popen[bytes]) -> None:
    before = _group_of(session_child.pid)
    code = ("import random, sys, time\n"
            "from mindspeed_ms.adaptation.launcher import leave_launcher_group, lower_launcher_group\n"
            "random.seed(int(sys.argv[1]))\n"
            "for _ in range(5):\n"
            f"    change = lower_launcher_group({session_child.pid})\n"
            "    time.sleep(random.random() * 0.05)\n"
            "    leave_launcher_group(change)\n"
            "    time.sleep(random.random() * 0.02)\n")
    workers = [subprocess.Popen([sys.executable, "-c", code, str(seed)]) for seed in range(6)]
    assert [worker.wait(timeout=120) for worker in workers] == [0] * 6
    assert _group_of(session_child.pid) == before
    assert not (Path(tempfile.gettempdir()) / f"mindspeed_ms-{os.getuid()}-{before[0].strip('/')}").exists()  # type: ignore[index]
