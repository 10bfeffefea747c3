"""Tests of ``mindspeed-ms convert-launch``: outputs, --check/--diff/--json/--in-place, exit codes, errors."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mindspeed_ms.cli import main

SCRIPT = """#!/bin/bash
# launch with torchrun
NPUS=2
GPT_ARGS="
    --use-ascend-mc2 \\
    --seq-length 128
"
torchrun --nproc_per_node $NPUS pretrain_gpt.py $GPT_ARGS | tee log.txt
"""
CLEAN = "#!/bin/bash\ntorchrun --nproc_per_node 2 pretrain_gpt.py --bf16\n"


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    path.chmod(0o754)
    return path


def test_prints_converted_script_and_reports_findings_on_stderr(
        script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert-launch", str(script)]) == 1  # one unsupported flag remains
    out, err = capsys.readouterr()
    assert "msrun --local_worker_num $NPUS --worker_num=$NPUS" in out
    assert out.startswith("#!/bin/bash\n")
    assert f"{script}:5:5: unsupported: --use-ascend-mc2" in err
    assert script.read_text() == SCRIPT


def test_clean_conversion_exits_zero_and_check_reports_pending_change(tmp_path: Path) -> None:
    path = tmp_path / "clean.sh"
    path.write_text(CLEAN)
    assert main(["convert-launch", str(path), "-o", str(tmp_path / "out.sh")]) == 0
    assert main(["convert-launch", "--check", str(path)]) == 1  # would change
    assert path.read_text() == CLEAN
    assert main(["convert-launch", "--check", str(tmp_path / "out.sh")]) == 0  # already converted


def test_drop_unsupported_removes_the_flag_and_clears_the_finding(script: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sh"
    assert main(["convert-launch", "--drop-unsupported", str(script), "-o", str(out)]) == 0
    assert "--use-ascend-mc2" not in out.read_text()
    assert "--seq-length 128" in out.read_text()


def test_output_file_keeps_the_mode_of_the_script(script: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sh"
    main(["convert-launch", str(script), "-o", str(out)])
    assert stat.S_IMODE(out.stat().st_mode) == 0o754


def test_in_place_is_atomic_keeps_mode_and_backup(script: Path) -> None:
    inode = script.stat().st_ino
    assert main(["convert-launch", "--in-place", str(script)]) == 1
    assert "msrun" in script.read_text()
    assert script.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert stat.S_IMODE(script.stat().st_mode) == 0o754
    assert script.with_name("run.sh.bak").read_text() == SCRIPT
    assert not [name for name in os.listdir(script.parent) if name.endswith(".tmp")]


def test_in_place_no_backup_and_unchanged_script_is_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "clean.sh"
    path.write_text(CLEAN)
    assert main(["convert-launch", "--in-place", "--no-backup", str(path)]) == 0
    assert not path.with_name("clean.sh.bak").exists()
    converted = path.read_text()
    mtime = path.stat().st_mtime_ns
    assert main(["convert-launch", "--in-place", str(path)]) == 0
    assert path.read_text() == converted
    assert path.stat().st_mtime_ns == mtime
    assert not path.with_name("clean.sh.bak").exists()


def test_diff_prints_a_unified_diff(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["convert-launch", "--diff", str(script)])
    out = capsys.readouterr().out
    assert out.startswith(f"--- {script}\n+++ {script} (msrun)\n")
    assert "-torchrun --nproc_per_node $NPUS" in out
    assert "+msrun --local_worker_num $NPUS" in out


def test_json_lists_changes_and_findings_and_sends_the_script_only_to_out(
        script: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.sh"
    assert main(["convert-launch", "--json", str(script), "-o", str(out)]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["changed"] is True
    assert document["problems"] == 1
    assert document["launches"] == 1
    assert {"line", "before", "after", "reasons"} <= set(document["changes"][0])
    change = next(item for item in document["changes"] if item["line"] == 8)
    assert change["before"].startswith("torchrun")
    assert change["after"].startswith("msrun")
    assert document["findings"] == [{"line": 5, "column": 5, "flag": "--use-ascend-mc2", "value": None,
                                     "status": "unsupported", "reason": document["findings"][0]["reason"]}]
    assert "msrun" in out.read_text()
    main(["convert-launch", "--json", str(script)])
    assert "#!/bin/bash" not in capsys.readouterr().out  # no OUT: the script is not printed


@pytest.mark.parametrize("argv", [
    ["--check", "-o", "x.sh"], ["--check", "--in-place"], ["--no-backup"], ["-o", "x.sh", "--in-place"]])
def test_conflicting_options_are_usage_errors(
        script: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert-launch", str(script), *argv]) == 2
    assert "error" in capsys.readouterr().err
    assert script.read_text() == SCRIPT
    assert not Path("x.sh").exists()


def test_missing_script_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert-launch", str(tmp_path / "nope.sh")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["torchrun t.py\nif true; then\n  echo x\n", "echo (\n", "for x in; do\n"])
def test_malformed_script_exits_two_with_position_and_writes_nothing(
        tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.sh"
    path.write_text(text)
    out = tmp_path / "out.sh"
    assert main(["convert-launch", str(path), "-o", str(out)]) == 2
    assert main(["convert-launch", str(path), "--in-place"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:" in err
    assert "error" in err
    line_and_column = err.split(f"{path}:", 1)[1].split(":")[:2]
    assert all(part.isdigit() for part in line_and_column)
    assert not out.exists()
    assert path.read_text() == text
    assert not path.with_name("bad.sh.bak").exists()


def test_installed_command_reads_stdin(tmp_path: Path) -> None:
    command = shutil.which("mindspeed-ms", path=os.path.dirname(sys.executable)) or "mindspeed-ms"
    result = subprocess.run([command, "convert-launch", "-"], input=CLEAN, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("#!/bin/bash\nmsrun --local_worker_num 2 --worker_num=2 ")
    assert "<stdin>: 1 launch(es)" in result.stderr


def test_json_is_valid_for_scripts_with_non_utf8_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.sh"
    path.write_bytes(b"# r\xe9sum\xe9\ntorchrun t.py --name caf\xe9\n")
    out = tmp_path / "out.sh"
    assert main(["convert-launch", "--json", str(path), "-o", str(out)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["changes"][0]["line"] == 2
    assert out.read_bytes().startswith(b"# r\xe9sum\xe9\nmsrun ")  # the bytes outside the edits are untouched
    assert b"--name caf\xe9 --ai-framework mindspore\n" in out.read_bytes()


# --- issue 14: symlinks and special files, option values, diff of non-UTF-8 scripts -----------------------

def test_in_place_on_a_symlink_converts_its_target_and_keeps_the_link(script: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.sh"
    link.symlink_to(script)
    assert main(["convert-launch", "--in-place", str(link)]) == 1
    assert link.is_symlink()
    assert os.readlink(link) == str(script)
    assert "msrun" in script.read_text()
    assert stat.S_IMODE(script.stat().st_mode) == 0o754
    assert script.with_name("run.sh.bak").read_text() == SCRIPT
    assert not tmp_path.joinpath("link.sh.bak").exists()


def test_output_onto_a_symlink_writes_through_it(script: Path, tmp_path: Path) -> None:
    target = tmp_path / "converted.sh"
    target.write_text("old\n")
    link = tmp_path / "out.sh"
    link.symlink_to(target)
    main(["convert-launch", str(script), "-o", str(link)])
    assert link.is_symlink()
    assert "msrun" in target.read_text()


def test_output_onto_a_fifo_is_refused_and_leaves_it_a_fifo(script: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "to-pipe"
    link.symlink_to(fifo)
    for target in (fifo, link):
        assert main(["convert-launch", str(script), "-o", str(target)]) == 2
        assert "is a FIFO" in capsys.readouterr().err
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert link.is_symlink()
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_in_place_on_a_fifo_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "run.sh"
    os.mkfifo(fifo)
    assert main(["convert-launch", "--in-place", str(fifo)]) == 2  # refused before reading: nothing blocks
    assert "is a FIFO" in capsys.readouterr().err
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_log_dir_with_blanks_is_quoted_on_the_launch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.sh"
    path.write_text(CLEAN)
    assert main(["convert-launch", str(path), "--log-dir", "/data/my logs"]) == 0
    assert "--log_dir='/data/my logs' " in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--cluster-time-out", "5; x"], ["--cluster-time-out", "-3"],
                                  ["--log-dir", ""]])
def test_invalid_option_values_exit_two_with_the_reason_and_write_nothing(
        script: Path, tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.sh"
    assert main(["convert-launch", str(script), "-o", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert argv[0] in err
    assert "error" in err
    assert not out.exists()
    assert script.read_text() == SCRIPT


def test_diff_of_a_non_utf8_script_passes_its_bytes_through_on_a_strict_utf8_stdout(tmp_path: Path) -> None:
    path = tmp_path / "gbk.sh"
    comment = "# \u542f\u52a8\u811a\u672c\n".encode("gbk")  # a GBK comment: not valid UTF-8
    path.write_bytes(comment + b"torchrun --nproc_per_node 2 t.py --name \xb2\xe2\n")
    command = [sys.executable, "-m", "mindspeed_ms.cli", "convert-launch", "--diff", str(path)]
    result = subprocess.run(command, capture_output=True, timeout=60, check=False,
                            env={**os.environ, "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8"})
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    assert b"-torchrun --nproc_per_node 2 t.py --name \xb2\xe2\n" in result.stdout
    assert b"+msrun --local_worker_num 2 " in result.stdout
    assert b" --name \xb2\xe2 --ai-framework mindspore\n" in result.stdout
