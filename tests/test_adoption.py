"""mindspeed_ms.patch_manager.adoption: the switch that makes ``mindspeed.patch_utils`` use our manager."""

from __future__ import annotations

import pytest

from mindspeed_ms.errors import SettingError
from mindspeed_ms.patch_manager.adoption import ADOPT_ENV, adoption_wanted


@pytest.mark.parametrize(("framework", "value", "expected"), [
    ("mindspore", None, True), ("pytorch", None, False), ("mindspore", "", True), ("pytorch", " ", False),
    ("mindspore", "0", False), ("mindspore", "Off", False), ("pytorch", "1", True), ("pytorch", "YES", True),
])
def test_adoption_follows_the_framework_unless_the_variable_says_otherwise(framework: str, value: str | None,
                                                                           expected: bool) -> None:
    environ = {} if value is None else {ADOPT_ENV: value}
    assert adoption_wanted(framework, environ) is expected


@pytest.mark.parametrize("value", ["flase", "2", "nope", "²", "true!"])
@pytest.mark.parametrize("framework", ["mindspore", "pytorch"])
def test_a_malformed_value_is_a_typed_error_naming_the_variable(framework: str, value: str) -> None:
    with pytest.raises(SettingError, match=ADOPT_ENV) as caught:
        adoption_wanted(framework, {ADOPT_ENV: value})
    assert isinstance(caught.value, ValueError)
    assert (caught.value.variable, caught.value.value) == (ADOPT_ENV, value)
