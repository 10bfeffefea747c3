"""The suite's own guard: a test that imports MSAdapter in pytest's process fails, naming itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests._helpers import subprocess_env

HERE = Path(__file__).resolve().parent


def _run_suite(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    suite = tmp_path / "tests"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    shutil.copy(HERE / "conftest.py", suite / "conftest.py")
    (suite / "test_probe.py").write_text(body)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=subprocess_env(PYTHONPATH=f"{tmp_path}:{HERE.parent}"))


def test_importing_msadapter_in_process_fails_the_test_that_did_it(tmp_path: Path) -> None:
    done = _run_suite(tmp_path, "def test_clean():\n    pass\n\n\n"
                                "def test_culprit():\n    import msadapter  # noqa: F401\n\n\n"
                                "def test_later():\n    pass\n")
    assert done.returncode != 0, done.stdout
    assert "test_probe.py::test_culprit imported msadapter in pytest's process" in done.stdout, done.stdout
    # only the culprit is reported: the tests before and after it pass
    assert "3 passed, 1 error" in done.stdout, done.stdout


def test_a_child_interpreter_may_import_msadapter(tmp_path: Path) -> None:
    done = _run_suite(tmp_path, "import subprocess, sys\n\n\n"
                                "def test_child():\n"
                                "    subprocess.run([sys.executable, '-c', 'import msadapter'], check=True)\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout
