from __future__ import annotations

import pytest

from mindspeed_ms.errors import PatchValidationError
from mindspeed_ms.requirements import normalize_requires, unmet_requirements


def test_normalize_accepts_string_and_sequence():
    assert normalize_requires("wrapt>=2") == ("wrapt>=2",)
    assert normalize_requires(["wrapt>=2", "packaging"]) == ("wrapt>=2", "packaging")
    assert normalize_requires(None) == ()


@pytest.mark.parametrize("bad", ["wrapt >= = 2", [1], 3.5])
def test_normalize_rejects_malformed(bad):
    with pytest.raises(PatchValidationError):
        normalize_requires(bad, target="x.y")


def test_unmet_requirements_reports_missing_and_out_of_range():
    problems = unmet_requirements(["wrapt>=2", "wrapt<1", "no-such-dist-qq"])
    assert len(problems) == 2
    assert "wrapt" in problems[0] and "'wrapt<1'" in problems[0]
    assert "no-such-dist-qq is not installed" in problems[1]


def test_marker_that_does_not_apply_is_met():
    assert unmet_requirements(['no-such-dist-qq; python_version < "3.0"']) == []
