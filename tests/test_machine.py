"""Tests of mindspeed_ms.migrate.machine: the machine doctor looks at, staged in tmp_path."""

from __future__ import annotations

import sys
from pathlib import Path

from mindspeed_ms.migrate.machine import Machine, run_text
from mindspeed_ms.testing import write_distribution

GBK_BYTES = "错误".encode("gbk")  # not UTF-8


def _machine(tmp_path: Path, **options: object) -> Machine:
    settings: dict[str, object] = {"environ": {}, "path": "", "search_path": [str(tmp_path / "site")],
                                   "python": None, "python_version": None, "argv": (), "timeout": 30.0}
    settings.update(options)
    return Machine(**settings)  # type: ignore[arg-type]


def test_version_is_read_from_the_staged_search_path_only(tmp_path: Path) -> None:
    write_distribution(tmp_path / "site", "megatron-core", version="0.12.1")
    machine = _machine(tmp_path)
    assert machine.version("megatron-core") == "0.12.1"
    assert machine.version("pytest") is None  # installed in this interpreter, not on the staged path


def test_version_of_a_distribution_whose_metadata_is_not_utf8(tmp_path: Path) -> None:
    info = write_distribution(tmp_path / "site", "mindspore", version="2.6.0")
    metadata_file = info / "METADATA"
    metadata_file.write_bytes(metadata_file.read_bytes() + b"Summary: " + GBK_BYTES + b"\n")
    assert _machine(tmp_path).version("mindspore") == "2.6.0"


def test_injected_environment_and_path_reach_a_child_and_the_process_own_are_the_defaults(tmp_path: Path) -> None:
    machine = _machine(tmp_path, environ={"HOME": "/nowhere"}, path="/staged/bin")
    child = machine.child_environ()
    assert child["PATH"] == "/staged/bin"
    assert child["HOME"] == "/nowhere"
    assert child["GLOG_v"] == "3"
    own = Machine(None, None, None, None, None, (), 1.0)
    assert own.python == sys.executable
    assert own.python_version == tuple(sys.version_info[:3])


def test_run_text_reads_output_that_is_not_utf8_with_replacement(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(f"import sys; sys.stdout.buffer.write({GBK_BYTES!r}); sys.exit(3)\n")
    done = run_text([sys.executable, str(script)], timeout=60, env={})
    assert done.returncode == 3
    assert "\ufffd" in done.stdout
