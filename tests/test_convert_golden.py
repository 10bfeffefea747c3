"""Golden tests of convert-launch: each script in tests/golden/convert_launch/ converts to its
``.expected.sh`` byte for byte, with the findings of its ``.findings.json``; every output passes
``bash -n``; converting an output again changes nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mindspeed_ms.migrate.convert import ConvertOptions, convert_script

CORPUS = Path(__file__).parent / "golden" / "convert_launch"
CASES = sorted(path for path in CORPUS.glob("*.sh") if not path.name.endswith("expected.sh"))


def _expected(case: Path) -> tuple[bytes, list[dict[str, object]]]:
    stem = case.with_suffix("")
    output = stem.with_name(stem.name + ".expected.sh").read_bytes()
    findings = json.loads(stem.with_name(stem.name + ".findings.json").read_text(encoding="utf-8"))
    return output, findings


def test_corpus_has_at_least_twelve_scripts_with_expectations() -> None:
    assert len(CASES) >= 12
    for case in CASES:
        _expected(case)  # each case has both expectation files


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
def test_script_converts_to_expected_output_and_findings(case: Path) -> None:
    expected_output, expected_findings = _expected(case)
    conversion = convert_script(case.read_bytes(), name=case.name)
    assert conversion.output.decode() == expected_output.decode()
    got = [{"line": item.line, "flag": item.flag, "status": item.status} for item in conversion.findings]
    wanted = [{key: item[key] for key in ("line", "flag", "status")} for item in expected_findings]
    assert sorted(got, key=json.dumps) == sorted(wanted, key=json.dumps)


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
def test_expected_output_passes_bash_n_and_converts_to_itself(case: Path) -> None:
    expected_output, _ = _expected(case)
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run([bash, "-n"], input=expected_output, capture_output=True, check=False)
    assert result.returncode == 0, result.stderr.decode()
    again = convert_script(expected_output, name=case.name)
    assert again.output == expected_output
    assert again.changes == ()


DROP_CASES = sorted(CORPUS.glob("*.drop.expected.sh"))


def test_drop_unsupported_cases_exist() -> None:
    assert len(DROP_CASES) >= 3


@pytest.mark.parametrize("expected", DROP_CASES, ids=[path.name.split(".")[0] for path in DROP_CASES])
def test_drop_unsupported_removes_flags_with_their_values_and_continuations(expected: Path) -> None:
    case = expected.with_name(expected.name.replace(".drop.expected.sh", ".sh"))
    conversion = convert_script(case.read_bytes(), name=case.name, options=ConvertOptions(drop_unsupported=True))
    assert conversion.output.decode() == expected.read_text()
    assert not [item for item in conversion.findings if item.status == "unsupported"]
    again = convert_script(conversion.output, options=ConvertOptions(drop_unsupported=True))
    assert again.output == conversion.output
