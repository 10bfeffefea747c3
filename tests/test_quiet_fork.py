"""mindspeed_ms.adaptation.quiet_fork: forks wait for MindSpore's pool threads to sleep (a forked DataLoader worker
must not inherit a lock one of them held), with real MindSpore, MSAdapter's DataLoader and real forks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _helpers import subprocess_env

from mindspeed_ms.adaptation.quiet_fork import POOL_THREAD_PREFIXES, pool_threads, wait_for_sleeping_pool


def _task(root: Path, tid: int, name: str, state: str) -> None:
    (root / str(tid)).mkdir()
    (root / str(tid) / "comm").write_text(name + "\n")
    # the second field is the name in parentheses, which may itself hold spaces and parentheses
    (root / str(tid) / "stat").write_text(f"{tid} ({name}) {state} 1 {tid} {tid} 0 -1 4194560 0 0\n")


def test_pool_threads_are_found_by_name_with_their_state(tmp_path: Path) -> None:
    _task(tmp_path, 10, "python", "R")
    _task(tmp_path, 11, "ActorThread_0", "R")
    _task(tmp_path, 12, "KernelThread_3", "S")
    _task(tmp_path, 13, "odd) R (name", "R")
    assert sorted(pool_threads(str(tmp_path))) == [("ActorThread_0", "R"), ("KernelThread_3", "S")]
    assert POOL_THREAD_PREFIXES == ("ActorThread_", "KernelThread_")
    assert pool_threads(str(tmp_path / "absent")) == []


def test_the_wait_ends_when_all_sleep_or_at_its_timeout_naming_who_runs(tmp_path: Path) -> None:
    _task(tmp_path, 11, "ActorThread_0", "S")
    _task(tmp_path, 12, "KernelThread_0", "S")
    asleep = wait_for_sleeping_pool(timeout=5.0, tasks=str(tmp_path))
    assert asleep.quiet
    assert asleep.threads == 2
    assert asleep.waited_s < 1.0
    (tmp_path / "12" / "stat").write_text("12 (KernelThread_0) R 1\n")
    busy = wait_for_sleeping_pool(timeout=0.2, tasks=str(tmp_path))
    assert not busy.quiet
    assert busy.running == ("KernelThread_0:R",)
    assert busy.waited_s >= 0.2


_WORKER = r"""
import ctypes, hashlib, json, logging, os, sys, threading, time
ITERATIONS = int(sys.argv[1])  # of a hash that takes a few seconds without the GIL
sys.argv = [sys.argv[0], "--ai-framework", "mindspore"]
import mindspeed_ms.adaptor  # noqa: F401
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from mindspeed_ms.adaptation import quiet_fork

out = {"installed": quiet_fork.installed()}
a = torch.randn(128, 128)

def busy():
    global a
    for _ in range(10):
        a = torch.tanh(a @ a * 0.01)

busy()
wait = quiet_fork.wait_for_sleeping_pool()
out["pool"] = wait.threads
out["quiet"] = wait.quiet
out["states"] = [state for _, state in quiet_fork.pool_threads()]

class Masks(Dataset):  # megatron's GPTDataset makes its masks with torch ops in the worker
    def __len__(self):
        return 8
    def __getitem__(self, index):
        return {"mask": torch.tril(torch.ones((1, 32, 32))) < 0.5, "position": torch.arange(32) + index}

busy()  # the parent's last ops right before the fork, as in megatron
batches = list(DataLoader(Masks(), batch_size=2, num_workers=2, timeout=120))
mask = np.tril(np.ones((1, 32, 32))) < 0.5
out["batches_right"] = len(batches) == 4 and all(
    np.array_equal(batch["mask"].numpy(), np.stack([mask, mask]))
    and np.array_equal(batch["position"].numpy(), np.stack([np.arange(32) + 2 * k, np.arange(32) + 2 * k + 1]))
    for k, batch in enumerate(batches))
last = quiet_fork.last_wait()
out["fork_waited"] = last is not None and last.quiet

# a pool thread that will not sleep (this thread named as MindSpore names its pool's): the fork waits, then warns
libc = ctypes.CDLL(None)
started = threading.Event()
def spin():
    libc.prctl(15, b"KernelThread_99", 0, 0, 0)  # PR_SET_NAME
    started.set()
    hashlib.pbkdf2_hmac("sha256", b"x", b"salt", ITERATIONS)  # runs without the GIL
spinner = threading.Thread(target=spin)
spinner.start()
started.wait()
stuck = quiet_fork.wait_for_sleeping_pool(timeout=0.3)
out["stuck_running"] = list(stuck.running)
warnings = []
class Keep(logging.Handler):
    def emit(self, record):
        warnings.append(record.getMessage())
logging.getLogger("mindspeed_ms.adaptation.quiet_fork").addHandler(Keep())
quiet_fork.install(timeout=0.3)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
out["warned"] = warnings
quiet_fork.uninstall()
before = quiet_fork.last_wait()
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
out["uninstalled_fork_waited"] = quiet_fork.last_wait() is not before
spinner.join()
print("RESULT " + json.dumps(out))
"""


def _pbkdf2_iterations_for(seconds: float) -> int:
    import hashlib
    import time

    start = time.perf_counter()
    hashlib.pbkdf2_hmac("sha256", b"x", b"salt", 20000)
    per = (time.perf_counter() - start) / 20000
    return int(seconds / max(per, 1e-9))


def test_forks_wait_for_the_pool_and_dataloader_workers_compute_what_numpy_does(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    done = subprocess.run([sys.executable, str(script), str(_pbkdf2_iterations_for(4.0))], capture_output=True,
                          text=True, timeout=500, env=subprocess_env(drop=("MINDSPEED_",)), cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert out["installed"] is True  # on by default on CPU
    assert out["pool"] >= 1
    assert out["quiet"] is True
    assert set(out["states"]) == {"S"}
    assert out["batches_right"] is True
    assert out["fork_waited"] is True
    assert out["stuck_running"] == ["KernelThread_99:R"]
    assert len(out["warned"]) == 1
    assert "KernelThread_99:R" in out["warned"][0]
    assert "may hang" in out["warned"][0]
    assert out["uninstalled_fork_waited"] is False


def test_the_setting_off_leaves_forks_alone(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text("import sys\nsys.argv = [sys.argv[0], '--ai-framework', 'mindspore']\n"
                      "import mindspeed_ms.adaptor\nfrom mindspeed_ms.adaptation import quiet_fork\n"
                      "print('installed', quiet_fork.installed())\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env=subprocess_env(drop=("MINDSPEED_",), MINDSPEED_MS_QUIET_FORK="0"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "installed False" in done.stdout
    assert "quiet_fork=off (env)" in done.stdout + done.stderr
