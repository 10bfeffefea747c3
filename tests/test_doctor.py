"""Tests of ``mindspeed-ms doctor``: this machine's real environment, and staged ones.

Staged machines are real directories: a CANN toolkit folder with its version file, an executable
``npu-smi`` on ``PATH``, a site directory that holds every installed distribution but the hidden ones
(symlinks), a ``.dist-info`` of a real torch. Doctor reads them through its injection points
(``environ``, ``path``, ``search_path``), and its ``import torch`` probe runs in a child interpreter
on the same search path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import pytest

from mindspeed_ms import versions
from mindspeed_ms.cli import main
from mindspeed_ms.migrate.doctor import CHECK_NAMES, Check, has_failures, run_checks
from mindspeed_ms.testing import write_distribution

BIN = os.path.dirname(sys.executable)
SITE = sysconfig.get_paths()["purelib"]
NO_CANN = {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "MINDSPEED_AI_FRAMEWORK"}
# The interpreter's own library, without any site-packages: the base of every staged search path.
STDLIB = [entry for entry in sys.path if entry and "site-packages" not in entry and Path(entry).exists()]

NPU_SMI_OK = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.rc3                 Version: 23.0.rc3                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.0        37                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | {health:<14}| 90.4        36                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3160 / 65536         |
+===========================+===============+====================================================+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 19341         | python                   | 58472                   |
+===========================+===============+====================================================+
"""


def _env(**extra: str) -> dict[str, str]:
    """Return this process's environment without CANN or a framework choice, plus ``extra``."""
    environ = {key: value for key, value in os.environ.items() if key not in NO_CANN}
    environ["PATH"] = BIN + os.pathsep + environ.get("PATH", os.defpath)
    environ.update(extra)
    return environ


def _path(*directories: Path) -> str:
    """Return a PATH of ``directories`` followed by the system's default (for sh, cat, sleep)."""
    return os.pathsep.join([*map(str, directories), os.defpath])


def _by_name(checks: Iterable[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


def _write_tool(directory: Path, name: str, script: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / name
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(0o755)
    return tool


def _site_without(tmp_path: Path, *distributions: str) -> list[str]:
    """Return a search path that holds every installed package except those of ``distributions``."""
    hidden: set[str] = set()
    for name in distributions:
        distribution = metadata.distribution(name)
        hidden |= {file.parts[0] for file in distribution.files or () if file.parts}
    site = tmp_path / "site"
    site.mkdir()
    for entry in Path(SITE).iterdir():
        if entry.name not in hidden and entry.name != "__pycache__":
            (site / entry.name).symlink_to(entry)
    return [*STDLIB, str(site)]


# --- this machine -----------------------------------------------------------------------------------------

def test_cli_json_reports_this_machine_cpu_rows_warn(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    for name in NO_CANN:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))
    code = main(["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    statuses = {check["name"]: check["status"] for check in report["checks"]}
    assert list(statuses) == list(CHECK_NAMES)
    assert statuses["cann"] == "warn"
    assert statuses["npu"] == "warn"
    for name in ("mindspore", "msadapter", "import torch", "real torch", "megatron-core", "msrun"):
        assert statuses[name] == "ok", report
    assert report["ok"] is True
    assert code == 0
    found = {check["name"]: check["found"] for check in report["checks"]}
    assert found["mindspore"] == versions.MINDSPORE_VERSION
    assert found["msrun"] == os.path.join(BIN, "msrun")
    assert set(report["checks"][0]) == {"name", "status", "found", "expected", "action"}


def test_installed_script_prints_the_table() -> None:
    done = subprocess.run([os.path.join(BIN, "mindspeed-ms"), "doctor"], capture_output=True, text=True,
                          env=_env(MINDSPEED_AI_FRAMEWORK="mindspore"), timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["check", "status", "found", "expected", "what", "to", "do"]
    rows = {line.split("  ")[0].strip(): line for line in lines[2:] if line and not line.startswith(" ")}
    assert rows["cann"].split()[1] == "warn"
    assert rows["mindspore"].split()[1] == "ok"
    assert "MINDSPEED_AI_FRAMEWORK=mindspore" in rows["ai-framework"]
    assert lines[-1].endswith("0 fail: no failures")


def test_doctor_never_imports_the_backend_into_its_own_process() -> None:
    code = ("import sys, json; from mindspeed_ms.migrate.doctor import run_checks; "
            "checks = run_checks(only={'import torch', 'mindspore'}); "
            "print(json.dumps([[c.status for c in checks], sorted({m.split('.')[0] for m in sys.modules} & "
            "{'mindspore', 'msadapter', 'torch'})]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120,
                          check=True)
    statuses, heavy = json.loads(done.stdout.splitlines()[-1])
    assert statuses == ["ok", "ok"]
    assert heavy == []


def test_doctor_cli_import_stays_cheap() -> None:
    code = ("import sys, mindspeed_ms.migrate.doctor_cli; print([m for m in ('mindspeed_ms.migrate.doctor', "
            "'importlib.metadata', 'packaging', 'dataclasses') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- staged machines: CANN --------------------------------------------------------------------------------

def _toolkit(tmp_path: Path, version: str) -> Path:
    home = tmp_path / "Ascend" / "ascend-toolkit" / "latest"
    info = home / "x86_64-linux" / "ascend_toolkit_install.info"
    info.parent.mkdir(parents=True)
    info.write_text(f"package_name=Ascend-cann-toolkit\nversion={version}\ninnerversion=V100R001C23SPC001B231\n"
                    f"arch=x86_64\nos=linux\npath=/usr/local/Ascend/ascend-toolkit/{version}/x86_64-linux\n")
    return home


def test_cann_with_the_table_version_is_ok(tmp_path: Path) -> None:
    home = _toolkit(tmp_path, versions.CANN_VERSION)
    (check,) = run_checks(_env(ASCEND_HOME_PATH=str(home)), only={"cann"})
    assert check.status == "ok"
    assert check.found.startswith(f"{versions.CANN_VERSION} (")
    assert "ascend_toolkit_install.info" in check.found


def test_cann_with_another_version_warns_and_names_both(tmp_path: Path) -> None:
    home = _toolkit(tmp_path, "8.0.RC3")
    (check,) = run_checks(_env(ASCEND_TOOLKIT_HOME=str(home)), only={"cann"})
    assert check.status == "warn"
    assert check.found.startswith("8.0.RC3")
    assert check.expected == versions.CANN_VERSION
    assert "set_env.sh" in check.action


def test_cann_version_cfg_of_older_toolkits_is_read(tmp_path: Path) -> None:
    home = tmp_path / "toolkit"
    home.mkdir()
    (home / "version.cfg").write_text("# version: 1.0\nruntime_running_version=[7.6.0.1.220:8.0.0]\n"
                                      "toolkit_running_version=[7.6.0.1.220:8.0.0]\n")
    (check,) = run_checks(_env(ASCEND_HOME_PATH=str(home)), only={"cann"})
    assert check.status == "warn"
    assert check.found.startswith("8.0.0 (")


def test_cann_variable_pointing_nowhere_fails(tmp_path: Path) -> None:
    checks = run_checks(_env(ASCEND_HOME_PATH=str(tmp_path / "missing")), only={"cann"})
    assert checks[0].status == "fail"
    assert "does not exist" in checks[0].found
    assert has_failures(checks)


def test_cann_folder_without_version_file_warns(tmp_path: Path) -> None:
    (check,) = run_checks(_env(ASCEND_HOME_PATH=str(tmp_path)), only={"cann"})
    assert check.status == "warn"
    assert "no version file" in check.found


# --- staged machines: NPU, msrun, framework, Python -------------------------------------------------------

def test_healthy_npu_smi_lists_npus(tmp_path: Path) -> None:
    _write_tool(tmp_path / "bin", "npu-smi", f"cat <<'EOF'\n{NPU_SMI_OK.format(health='OK')}EOF\n")
    (check,) = run_checks(_env(), path=_path(tmp_path / "bin"), only={"npu"})
    assert (check.status, check.found) == ("ok", "2 NPU(s): 910B3")


def test_unhealthy_npu_warns_with_its_id(tmp_path: Path) -> None:
    _write_tool(tmp_path / "bin", "npu-smi", f"cat <<'EOF'\n{NPU_SMI_OK.format(health='Warning')}EOF\n")
    (check,) = run_checks(_env(), path=_path(tmp_path / "bin"), only={"npu"})
    assert check.status == "warn"
    assert check.found.endswith("NPU 1: Warning")


def test_failing_npu_smi_fails_with_its_message(tmp_path: Path) -> None:
    _write_tool(tmp_path / "bin", "npu-smi", "echo 'dcmi module initialize failed. ret is -8005' >&2\nexit 255\n")
    checks = run_checks(_env(), path=_path(tmp_path / "bin"), only={"npu"})
    assert checks[0].status == "fail"
    assert "exited with 255: dcmi module initialize failed" in checks[0].found


def test_hanging_npu_smi_fails_after_the_timeout(tmp_path: Path) -> None:
    _write_tool(tmp_path / "bin", "npu-smi", "exec sleep 30\n")
    (check,) = run_checks(_env(), path=_path(tmp_path / "bin"), only={"npu"}, timeout=0.5)
    assert check.status == "fail"
    assert "timed out" in check.found


def test_msrun_missing_from_path_fails(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (check,) = run_checks(_env(), path=str(tmp_path / "bin"), only={"msrun"})
    assert check.status == "fail"
    assert check.found == "no msrun on PATH"
    assert BIN in check.action


def test_msrun_whose_workers_would_start_another_python_warns(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "msrun").symlink_to(os.path.join(BIN, "msrun"))
    _write_tool(tmp_path / "other", "python", "exit 0\n")
    path = os.pathsep.join([str(tmp_path / "other"), str(tmp_path / "bin")])
    (check,) = run_checks(_env(), path=path, only={"msrun"})
    assert check.status == "warn"
    assert str(tmp_path / "other" / "python") in check.found


@pytest.mark.parametrize(("environ", "argv", "status", "source"), [
    ({}, [], "ok", "default"),
    ({"MINDSPEED_AI_FRAMEWORK": "mindspore"}, [], "ok", "MINDSPEED_AI_FRAMEWORK=mindspore"),
    ({"MINDSPEED_AI_FRAMEWORK": "pytorch"}, ["--ai-framework=mindspore"], "ok", "command line"),
    ({"MINDSPEED_AI_FRAMEWORK": "pytorch"}, [], "warn", "MINDSPEED_AI_FRAMEWORK=pytorch"),
    ({"MINDSPEED_AI_FRAMEWORK": "tensorflow"}, [], "fail", "invalid AI framework 'tensorflow'"),
])
def test_ai_framework_shows_value_and_source(environ: dict[str, str], argv: list[str], status: str,
                                             source: str) -> None:
    (check,) = run_checks(environ, path="", argv=argv, only={"ai-framework"})
    assert check.status == status
    assert source in check.found


@pytest.mark.parametrize(("version", "status"), [((3, 9, 18), "ok"), ((3, 10, 14), "ok"), ((3, 11, 7), "warn"),
                                                 ((3, 8, 10), "warn")])
def test_python_version_against_the_table(version: tuple[int, int, int], status: str) -> None:
    (check,) = run_checks({}, path="", python_version=version, only={"python"})
    assert (check.status, check.found, check.expected) == (status, ".".join(map(str, version)), "3.9.x or 3.10.x")


# --- staged machines: packages ----------------------------------------------------------------------------

def test_missing_msadapter_fails_both_rows(tmp_path: Path) -> None:
    search = _site_without(tmp_path, "msadapter")
    checks = _by_name(run_checks(_env(), search_path=search, only={"msadapter", "import torch", "mindspore"}))
    assert checks["msadapter"].status == "fail"
    assert checks["msadapter"].action == versions.MSADAPTER_INSTALL
    assert checks["import torch"].status == "fail"
    assert "import msadapter: ModuleNotFoundError" in checks["import torch"].found
    assert checks["mindspore"].status == "ok"


def test_missing_mindspore_fails_and_breaks_the_torch_probe(tmp_path: Path) -> None:
    search = _site_without(tmp_path, "mindspore")
    checks = _by_name(run_checks(_env(), search_path=search, only={"mindspore", "msadapter", "import torch"}))
    assert checks["mindspore"].status == "fail"
    assert checks["mindspore"].found == "not installed"
    assert checks["msadapter"].status == "ok"
    assert checks["import torch"].status == "fail"
    assert "mindspore" in checks["import torch"].found


def test_missing_megatron_core_fails_unless_a_source_checkout_is_on_the_path(tmp_path: Path) -> None:
    search = _site_without(tmp_path, "megatron-core")
    (check,) = run_checks({}, path="", search_path=search, only={"megatron-core"})
    assert check.status == "fail"
    assert check.action == versions.MEGATRON_CORE_INSTALL
    checkout = tmp_path / "Megatron-LM"
    (checkout / "megatron" / "core").mkdir(parents=True)
    (checkout / "megatron" / "core" / "__init__.py").write_text("")
    (check,) = run_checks({}, path="", search_path=[str(checkout), *search], only={"megatron-core"})
    assert check.status == "warn"
    assert str(checkout / "megatron") in check.found


def test_other_versions_warn_and_say_whether_the_patches_accept_them(tmp_path: Path) -> None:
    older = tmp_path / "older"
    write_distribution(older, "mindspore", version="2.6.0")
    write_distribution(older, "megatron-core", version="0.12.2")
    checks = _by_name(run_checks({}, path="", search_path=[str(older), *sys.path],
                                 only={"mindspore", "megatron-core"}))
    assert checks["mindspore"].status == "warn"
    assert checks["mindspore"].found == "2.6.0"
    assert "outside the range" in checks["mindspore"].action
    assert checks["megatron-core"].status == "warn"
    assert "inside the range" in checks["megatron-core"].action


def test_real_torch_beside_msadapter_fails(tmp_path: Path) -> None:
    write_distribution(tmp_path / "torch-site", "torch", version="2.1.0")
    checks = run_checks(_env(), search_path=[*sys.path, str(tmp_path / "torch-site")], only={"real torch"})
    assert checks[0].status == "fail"
    assert checks[0].found == "torch 2.1.0 beside msadapter"
    assert "pip uninstall -y torch" in checks[0].action
    assert has_failures(checks)


def test_real_torch_without_msadapter_only_warns(tmp_path: Path) -> None:
    search = _site_without(tmp_path, "msadapter")
    write_distribution(tmp_path / "torch-site", "torch-npu", version="2.1.0.post8")
    (check,) = run_checks({}, path="", search_path=[*search, str(tmp_path / "torch-site")], only={"real torch"})
    assert check.status == "warn"
    assert check.found == "torch-npu 2.1.0.post8"


def test_a_failing_check_makes_the_cli_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no msrun, no npu-smi
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.rstrip().endswith("problems found")
    failed = {line.split()[0] for line in out.splitlines()[2:] if line.split()[1:2] == ["fail"]}
    assert failed == {"cann", "msrun"}


def test_unknown_check_names_and_statuses_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown doctor check.*'gpu'"):
        run_checks({}, only={"gpu"})
    with pytest.raises(ValueError, match="status 'maybe'"):
        Check("python", "maybe", "3.11", "3.9")


def test_npu_smi_table_text_is_parsed_into_rows() -> None:
    from mindspeed_ms.migrate.doctor import npu_rows

    rows = npu_rows(textwrap.dedent(NPU_SMI_OK.format(health="Alarm")))
    assert rows == [("0", "910B3", "OK"), ("1", "910B3", "Alarm")]


# --- output that is not UTF-8 (issue 14, item 8) ----------------------------------------------------------

GBK_ERROR = "\u9a71\u52a8\u9519\u8bef".encode("gbk")  # "driver error" in GBK: not valid UTF-8


def _octal(data: bytes) -> str:
    return "".join(f"\\{byte:03o}" for byte in data)


def test_npu_smi_printing_non_utf8_bytes_is_read_with_replacement(tmp_path: Path) -> None:
    table = NPU_SMI_OK.format(health="OK").encode()
    _write_tool(tmp_path / "bin", "npu-smi", f"printf '{_octal(GBK_ERROR)}\\n'\ncat <<'EOF'\n{table.decode()}EOF\n")
    (check,) = run_checks(_env(), path=_path(tmp_path / "bin"), only={"npu"})
    assert (check.status, check.found) == ("ok", "2 NPU(s): 910B3")


def test_failing_npu_smi_with_a_non_utf8_message_reports_it_with_replacement(tmp_path: Path) -> None:
    _write_tool(tmp_path / "bin", "npu-smi", f"printf 'dcmi {_octal(GBK_ERROR)}\\n' >&2\nexit 3\n")
    (check,) = run_checks(_env(), path=_path(tmp_path / "bin"), only={"npu"})
    assert check.status == "fail"
    assert "exited with 3: dcmi \ufffd" in check.found


def test_probe_interpreter_with_non_utf8_stderr_fails_the_check_without_crashing(tmp_path: Path) -> None:
    python = _write_tool(tmp_path / "bin", "python", f"printf 'ImportError: {_octal(GBK_ERROR)}\\n' >&2\nexit 1\n")
    (check,) = run_checks(_env(), python=str(python), only={"import torch"})
    assert check.status == "fail"
    assert "exited with 1: ImportError: \ufffd" in check.found


def test_distribution_with_non_utf8_metadata_still_reports_its_version(tmp_path: Path) -> None:
    info = write_distribution(tmp_path / "site", "mindspore", version="2.6.0")
    metadata_file = info / "METADATA"
    metadata_file.write_bytes(metadata_file.read_bytes() + b"Summary: " + GBK_ERROR + b"\n")
    (check,) = run_checks({}, path="", search_path=[str(tmp_path / "site"), *sys.path], only={"mindspore"})
    assert (check.status, check.found) == ("warn", "2.6.0")
