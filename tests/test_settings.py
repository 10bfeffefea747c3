"""mindspeed_ms.adaptation.settings: every variable read once, parsed by its kind, garbage rejected, frozen."""

from __future__ import annotations

import pytest

from mindspeed_ms.adaptation.settings import VARIABLES, Settings, SettingsFrozenError
from mindspeed_ms.errors import FrameworkError, SettingError

# variable -> (a valid spelling, the value it gives, garbage)
CASES = {
    "MINDSPEED_AI_FRAMEWORK": (" MindSpore ", "mindspore", "paddle"),
    "MINDSPEED_MS_DISABLE": (" beta , alpha,,custom-name ", frozenset({"alpha", "beta", "custom-name"}), "a;b"),
    "MINDSPEED_MS_ADOPT_MINDSPEED": ("off", False, "flase"),
    "MINDSPEED_MS_LOG_LEVEL": ("debug", "DEBUG", "chatty"),
    "MINDSPEED_MS_MISSING_TARGETS": ("SKIP", "skip", "bogus"),
    "MINDSPEED_MS_TRACE": ("yes", True, "2"),
    "MINDSPEED_MS_TRACE_FILE": ("/tmp/trace_{rank}.json", "/tmp/trace_{rank}.json", "/tmp/a\0b"),
    "MINDSPEED_MS_PARITY_DIR": ("/tmp/parity", "/tmp/parity", " /tmp/parity"),
    "MINDSPEED_MS_DEVICE": ("npu", "Ascend", "tpu"),
    "MINDSPEED_MS_OPS_COMPOSITE": ("1", True, "sure"),
    "MINDSPEED_MS_LAUNCH_BLOCKING": ("0", False, "maybe"),
    "MINDSPEED_MS_DISPATCH_THREADS": ("4", 4, "0"),
    "MINDSPEED_MS_CPU_OP_THREADS": ("2", 2, "two"),
    "MINDSPEED_MS_CPU_AFFINITY": ("TRUE", True, "Y"),
    "MINDSPEED_MS_QUIET_LAUNCHER": ("off", False, "sometimes"),
    "MINDSPEED_MS_KEEP_SUBNORMALS": ("No", False, "nope"),
    "MINDSPEED_MS_QUIET_FORK": ("yes", True, "later"),
}
FIELD = {variable: field for field, variable in VARIABLES.items()}


def test_every_variable_of_the_table_has_a_case() -> None:
    assert set(CASES) == set(VARIABLES.values())


@pytest.mark.parametrize("variable", sorted(CASES))
def test_each_variable_is_parsed_by_its_kind(variable: str) -> None:
    text, value, _ = CASES[variable]
    assert getattr(Settings.from_environ({variable: text}), FIELD[variable]) == value


@pytest.mark.parametrize("variable", sorted(set(CASES) - {"MINDSPEED_AI_FRAMEWORK"}))
def test_garbage_is_a_setting_error_naming_the_variable_and_what_it_accepts(variable: str) -> None:
    garbage = CASES[variable][2]
    with pytest.raises(SettingError, match=variable) as caught:
        Settings.from_environ({variable: garbage})
    assert isinstance(caught.value, ValueError)
    assert caught.value.variable == variable
    assert caught.value.value == garbage
    assert caught.value.expected in str(caught.value)


def test_an_unknown_framework_in_the_environment_is_a_framework_error_listing_the_choices() -> None:
    with pytest.raises(FrameworkError, match="'paddle'.*MINDSPEED_AI_FRAMEWORK.*'pytorch', 'mindspore'") as caught:
        Settings.from_environ({"MINDSPEED_AI_FRAMEWORK": "paddle"})
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("value", ["²", "٣", "１"])  # str.isdigit() accepts each; int() rejects the first
def test_a_non_ascii_digit_is_a_setting_error_not_a_count(value: str) -> None:
    for variable in ("MINDSPEED_MS_DISPATCH_THREADS", "MINDSPEED_MS_CPU_OP_THREADS"):
        with pytest.raises(SettingError, match=variable) as caught:
            Settings.from_environ({variable: value})
        assert caught.value.value == value
    with pytest.raises(SettingError, match="MINDSPEED_MS_LOG_LEVEL"):
        Settings.from_environ({"MINDSPEED_MS_LOG_LEVEL": "²"})


def test_unset_and_empty_variables_give_the_defaults() -> None:
    empty = {variable: "" for variable in CASES}
    assert Settings.from_environ(empty) == Settings()
    assert Settings.from_environ({}) == Settings()
    defaults = Settings()
    assert defaults.framework is None
    assert defaults.disabled == frozenset()
    assert defaults.log_level == "INFO"
    assert defaults.missing_targets == "error"
    assert defaults.trace is False
    assert defaults.launch_blocking is None


def test_a_numeric_log_level_is_a_number() -> None:
    assert Settings.from_environ({"MINDSPEED_MS_LOG_LEVEL": "40"}).log_level == 40


def test_settings_are_frozen() -> None:
    settings = Settings.from_environ({"MINDSPEED_MS_TRACE": "1"})
    with pytest.raises(SettingsFrozenError, match="replace"):
        settings.trace = False  # type: ignore[misc]  # the point: it is refused
    with pytest.raises(AttributeError):
        del settings.trace  # type: ignore[misc]
    assert settings.trace is True
    changed = settings.replace(trace=False)
    assert changed.trace is False
    assert settings.trace is True
    assert hash(changed) == hash(Settings())


def test_settings_are_read_once_not_when_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINDSPEED_MS_TRACE", "1")
    settings = Settings.from_environ()
    monkeypatch.setenv("MINDSPEED_MS_TRACE", "0")
    assert settings.trace is True


def test_an_unknown_field_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="tracing"):
        Settings(tracing=True)
