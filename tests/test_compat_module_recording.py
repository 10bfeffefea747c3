"""The flag that makes fused host paths call every module while a parity capture records their outputs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mindspeed_ms.compat import module_recording
from mindspeed_ms.parity import capture


@pytest.fixture
def restored() -> Iterator[None]:
    before = module_recording.recording_module_outputs()
    yield
    module_recording.set_recording_module_outputs(before)


def test_nothing_is_recorded_until_a_capture_says_so() -> None:
    assert module_recording.recording_module_outputs() is False


@pytest.mark.usefixtures("restored")
def test_the_flag_reads_what_was_set_last() -> None:
    module_recording.set_recording_module_outputs(True)
    assert module_recording.recording_module_outputs() is True
    module_recording.set_recording_module_outputs(0)  # type: ignore[arg-type]
    assert module_recording.recording_module_outputs() is False


@pytest.mark.usefixtures("restored")
def test_the_parity_layer_reads_and_sets_the_same_flag_the_compat_layer_reads() -> None:
    assert capture.recording_module_outputs is module_recording.recording_module_outputs
    module_recording.set_recording_module_outputs(True)
    assert capture.recording_module_outputs() is True


def test_the_compat_package_does_not_import_the_parity_layer() -> None:
    import ast
    from pathlib import Path

    compat = Path(module_recording.__file__).parent
    offenders = []
    for path in sorted(compat.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {name}" for name in names if name.startswith("mindspeed_ms.parity")]
    assert offenders == []
