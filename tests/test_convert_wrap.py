"""convert-launch --wrap-run: each msrun launch runs under ``mindspeed-ms run --`` (the adaptor first in every worker).

Golden outputs: tests/golden/convert_launch/*.wrap.expected.sh (see that folder's README).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mindspeed_ms.migrate.convert import ConvertOptions, convert_script

CORPUS = Path(__file__).parent / "golden" / "convert_launch"
WRAP_CASES = sorted(CORPUS.glob("*.wrap.expected.sh"))
WRAP = ConvertOptions(wrap_run=True)


def _input(expected: Path) -> Path:
    return expected.with_name(expected.name.replace(".wrap.expected.sh", ".sh"))


def test_wrap_cases_cover_torchrun_prefixes_and_an_msrun_script() -> None:
    assert {path.name.split("_")[0] for path in WRAP_CASES} >= {"01", "04", "11", "13"}


@pytest.mark.parametrize("expected", WRAP_CASES, ids=[path.name.split(".")[0] for path in WRAP_CASES])
def test_each_launch_is_wrapped_and_nothing_else_changes(expected: Path) -> None:
    case = _input(expected)
    wrapped = convert_script(case.read_bytes(), name=case.name, options=WRAP)
    plain = convert_script(case.read_bytes(), name=case.name)
    assert wrapped.output.decode() == expected.read_text()
    assert wrapped.output.replace(b"mindspeed-ms run -- msrun", b"msrun") == plain.output
    assert wrapped.findings == plain.findings
    assert all("every worker imports mindspeed_ms.adaptor first" in " ".join(change.reasons)
               for change in wrapped.changes if b"mindspeed-ms run" in change.after.encode()), wrapped.changes


@pytest.mark.parametrize("expected", WRAP_CASES, ids=[path.name.split(".")[0] for path in WRAP_CASES])
def test_a_wrapped_script_passes_bash_n_and_is_never_wrapped_twice(expected: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run([bash, "-n"], input=expected.read_bytes(), capture_output=True, check=False)
    assert result.returncode == 0, result.stderr.decode()
    for options in (WRAP, ConvertOptions()):
        again = convert_script(expected.read_bytes(), name=expected.name, options=options)
        assert again.output == expected.read_bytes()
        assert again.changes == ()
        assert again.launches >= 1  # the launch under `mindspeed-ms run --` is still seen (flags checked)


def test_a_torchrun_launch_already_under_run_is_converted_inside_it() -> None:
    source = (b"#!/bin/bash\nmindspeed-ms run --ai-framework mindspore -- torchrun --nproc_per_node 2 train.py "
              b"--lr 1\n")
    conversion = convert_script(source, options=WRAP)
    assert conversion.output.startswith(b"#!/bin/bash\nmindspeed-ms run --ai-framework mindspore -- msrun ")
    assert b"--local_worker_num 2" in conversion.output
    assert conversion.output.count(b"mindspeed-ms run") == 1


def test_the_cli_option_wraps_and_reports_it(tmp_path: Path) -> None:
    case = CORPUS / "01_llama2_7b_torchrun.sh"
    done = subprocess.run([sys.executable, "-m", "mindspeed_ms.cli", "convert-launch", "--wrap-run", "--json",
                           "-o", str(tmp_path / "out.sh"), str(case)], capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    assert (tmp_path / "out.sh").read_text() == (CORPUS / "01_llama2_7b_torchrun.wrap.expected.sh").read_text()
    reasons = [reason for change in json.loads(done.stdout)["changes"] for reason in change["reasons"]]
    assert any(reason.startswith("torchrun -> mindspeed-ms run -- msrun") for reason in reasons), reasons
