"""mindspeed_ms.parity.processes: a run past its timeout leaves no process behind, launchers' workers included.

msrun puts each worker in a session of its own (``os.setsid``) and torchrun does the same, so ending the
launcher's process group is not enough; here with a real msrun on 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

from _helpers import BIN, is_running, subprocess_env

from mindspeed_ms.parity.processes import RUN_TOKEN_ENV, end_processes, processes_of_run, run_with_timeout

HANGING = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
with open(sys.argv[1], "w") as stream:
    stream.write(f"{os.getpid()} {child.pid}\\n")
time.sleep(600)
"""


def _env(token: str) -> dict[str, str]:
    return subprocess_env(bin_first=True, **{RUN_TOKEN_ENV: token})


def test_msrun_past_the_timeout_is_ended_with_its_setsid_workers_and_their_children(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent(HANGING))
    pids = tmp_path / "pids"
    command = [str(BIN / "msrun"), "--worker_num=1", "--local_worker_num=1", "--master_port=0", "--join=True",
               f"--log_dir={tmp_path / 'logs'}", str(script), str(pids)]
    status = run_with_timeout(command, env=_env(uuid.uuid4().hex), cwd=str(tmp_path), log=tmp_path / "out.log",
                              timeout=25)
    assert status == 124
    worker, child = (int(pid) for pid in pids.read_text().split())
    assert not is_running(worker)
    assert not is_running(child)


def test_a_process_whose_parent_exited_is_found_by_the_runs_token(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    pids = tmp_path / "pids"
    # the parent starts a child in a new session and exits at once: the child is re-parented, out of the tree
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        open({str(pids)!r}, "w").write(str(child.pid))
    """)], env=_env(token), timeout=60)
    assert done.returncode == 0
    orphan = int(pids.read_text())
    try:
        assert orphan in processes_of_run(None, token)
        assert processes_of_run(None, uuid.uuid4().hex) == []  # another run's token finds nothing of it
        assert orphan in end_processes(None, token, grace=5.0)
        assert not is_running(orphan)
    finally:
        if is_running(orphan):
            os.kill(orphan, 9)


def test_a_run_that_ends_in_time_returns_its_own_status_and_leaves_nothing(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    pids = tmp_path / "pids"
    code = (f"import subprocess, sys; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
            f"start_new_session=True); open({str(pids)!r}, 'w').write(str(c.pid)); sys.exit(3)")
    status = run_with_timeout([sys.executable, "-c", code], env=_env(token), cwd=str(tmp_path),
                              log=tmp_path / "out.log", timeout=60)
    assert status == 3
    assert not is_running(int(pids.read_text()))
