"""The adaptation's settings: every environment variable of mindspeed_ms, read once, checked, frozen.

:meth:`Settings.from_environ` reads each variable of :data:`VARIABLES` once, with the parser of its kind
(:mod:`mindspeed_ms.engine.environment`: yes/no, choice, count, names, path), and rejects a
malformed value with :class:`~mindspeed_ms.engine.errors.SettingError` (a ``ValueError``) naming the
variable and what it accepts. An :class:`~mindspeed_ms.adaptation.core.Adaptation` reads them the
first time it needs them and hands the values down; tests build a ``Settings`` from a dict.

The variables, with their kinds, defaults and effects, are listed once, in ``docs/environment.md``
(README points there); :data:`VARIABLES` maps each field of :class:`Settings` to its variable.

The class is written out instead of ``@dataclass(frozen=True)``: ``dataclasses`` imports ``inspect``,
and the settings are read on the adaptor's PyTorch-mode import path, which must stay cheap.
"""

from __future__ import annotations

import os
from types import MappingProxyType

from mindspeed_ms.adaptation.errors import SettingsFrozenError
from mindspeed_ms.engine.environment import parse_choice, parse_count, parse_names, parse_path, parse_switch
from mindspeed_ms.engine.errors import SettingError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["Settings", "SettingsFrozenError", "VARIABLES", "FRAMEWORK_ENV", "DISABLE_ENV", "ADOPT_ENV", "LOG_LEVEL_ENV",
           "MISSING_TARGETS_ENV", "TRACE_ENV", "TRACE_FILE_ENV", "PARITY_DIR_ENV", "DEVICE_ENV",
           "OPS_COMPOSITE_ENV", "RUNTIME_ENV", "FRAMEWORKS", "LOG_LEVELS", "ADOPTION_PROVIDER", "PYTORCH_CPU_PROVIDER",
           "adoption_wanted"]

FRAMEWORK_ENV = "MINDSPEED_AI_FRAMEWORK"
DISABLE_ENV = "MINDSPEED_MS_DISABLE"
ADOPT_ENV = "MINDSPEED_MS_ADOPT_MINDSPEED"
LOG_LEVEL_ENV = "MINDSPEED_MS_LOG_LEVEL"
MISSING_TARGETS_ENV = "MINDSPEED_MS_MISSING_TARGETS"
TRACE_ENV = "MINDSPEED_MS_TRACE"
TRACE_FILE_ENV = "MINDSPEED_MS_TRACE_FILE"
PARITY_DIR_ENV = "MINDSPEED_MS_PARITY_DIR"
DEVICE_ENV = "MINDSPEED_MS_DEVICE"
OPS_COMPOSITE_ENV = "MINDSPEED_MS_OPS_COMPOSITE"
#: runtime setting name (see :mod:`.runtime`) -> the variable that sets it
RUNTIME_ENV: Mapping[str, str] = MappingProxyType({
    "launch_blocking": "MINDSPEED_MS_LAUNCH_BLOCKING",
    "dispatch_threads": "MINDSPEED_MS_DISPATCH_THREADS",
    "cpu_op_threads": "MINDSPEED_MS_CPU_OP_THREADS",
    "cpu_affinity": "MINDSPEED_MS_CPU_AFFINITY",
    "quiet_launcher": "MINDSPEED_MS_QUIET_LAUNCHER",
    "keep_subnormals": "MINDSPEED_MS_KEEP_SUBNORMALS",
    "quiet_fork": "MINDSPEED_MS_QUIET_FORK",
})

#: The frameworks a training entrypoint can run on.
FRAMEWORKS: tuple[str, ...] = ("pytorch", "mindspore")
#: Logging levels by name (a number is accepted too).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: The built-in provider that adopts ``mindspeed.patch_utils`` (see :mod:`mindspeed_ms.patch_manager.adoption`).
ADOPTION_PROVIDER = "mindspeed_patch_manager"
#: The built-in provider of PyTorch mode on a machine without CUDA (see :mod:`.pytorch_mode`).
PYTORCH_CPU_PROVIDER = "pytorch_cpu"
_MISSING_TARGETS = {"error": "error", "skip": "skip"}
_DEVICES = {"cpu": "CPU", "ascend": "Ascend", "npu": "Ascend", "gpu": "GPU"}

#: field name -> the variable it is read from, in table order
VARIABLES: Mapping[str, str] = MappingProxyType({
    "framework": FRAMEWORK_ENV, "disabled": DISABLE_ENV, "adopt_mindspeed": ADOPT_ENV, "log_level": LOG_LEVEL_ENV,
    "missing_targets": MISSING_TARGETS_ENV, "trace": TRACE_ENV, "trace_file": TRACE_FILE_ENV,
    "parity_dir": PARITY_DIR_ENV, "device": DEVICE_ENV, "ops_composite": OPS_COMPOSITE_ENV, **RUNTIME_ENV,
})
_DEFAULTS: dict[str, Any] = {
    "framework": None, "disabled": frozenset(), "adopt_mindspeed": None, "log_level": "INFO",
    "missing_targets": "error", "trace": False, "trace_file": None, "parity_dir": None, "device": None,
    "ops_composite": False, "launch_blocking": None, "dispatch_threads": None, "cpu_op_threads": None,
    "cpu_affinity": None, "quiet_launcher": None, "keep_subnormals": None, "quiet_fork": None,
}


def _parse_level(variable: str, raw: str | None) -> str | int | None:
    text = (raw or "").strip()
    if text.isascii() and text.isdigit():
        return int(text)
    return parse_choice(variable, raw, {name.lower(): name for name in LOG_LEVELS})


def _parse(field: str, variable: str, raw: str | None) -> Any:
    """Parse one variable with the parser of its kind; ``None`` (or an empty set) when unset."""
    if field == "framework":
        try:
            return parse_choice(variable, raw, {name: name for name in FRAMEWORKS})
        except SettingError as exc:
            from mindspeed_ms.adaptation.errors import FrameworkError

            raise FrameworkError(f"invalid AI framework {raw!r} from the environment variable {variable}: "
                                 f"choose one of {', '.join(map(repr, FRAMEWORKS))} (e.g. '--ai-framework mindspore')"
                                 ) from exc
    if field == "disabled":
        return parse_names(variable, raw)
    if field == "log_level":
        return _parse_level(variable, raw)
    if field == "missing_targets":
        return parse_choice(variable, raw, _MISSING_TARGETS)
    if field == "device":
        return parse_choice(variable, raw, _DEVICES)
    if field in ("trace_file", "parity_dir"):
        return parse_path(variable, raw)
    if field in ("dispatch_threads", "cpu_op_threads"):
        return parse_count(variable, raw)
    # adopt_mindspeed, trace, ops_composite, launch_blocking, cpu_affinity, quiet_launcher, keep_subnormals,
    # quiet_fork
    return parse_switch(variable, raw)


class Settings:
    """mindspeed_ms's environment, read once and frozen (see the module's table).

    Attributes:
        framework: ``MINDSPEED_AI_FRAMEWORK``: ``"pytorch"``, ``"mindspore"``, or ``None`` when unset
            (the command line and the default decide then, see :mod:`.framework`).
        disabled: ``MINDSPEED_MS_DISABLE``: provider names.
        adopt_mindspeed: ``MINDSPEED_MS_ADOPT_MINDSPEED``: ``None`` when unset (the framework decides).
        log_level: ``MINDSPEED_MS_LOG_LEVEL``: a level name or number.
        missing_targets: ``MINDSPEED_MS_MISSING_TARGETS``: ``"error"`` or ``"skip"``.
        trace: ``MINDSPEED_MS_TRACE``.
        trace_file: ``MINDSPEED_MS_TRACE_FILE``, or ``None``.
        parity_dir: ``MINDSPEED_MS_PARITY_DIR``, or ``None``.
        device: ``MINDSPEED_MS_DEVICE`` (canonical ``"CPU"``/``"Ascend"``/``"GPU"``), or ``None``.
        ops_composite: ``MINDSPEED_MS_OPS_COMPOSITE``.
        launch_blocking, cpu_affinity, quiet_launcher, keep_subnormals, quiet_fork: yes/no, ``None`` when unset (the
            device's default applies).
        dispatch_threads, cpu_op_threads: positive integers, ``None`` when unset.
    """

    __slots__ = tuple(VARIABLES)

    framework: str | None
    disabled: frozenset[str]
    adopt_mindspeed: bool | None
    log_level: str | int
    missing_targets: str
    trace: bool
    trace_file: str | None
    parity_dir: str | None
    device: str | None
    ops_composite: bool
    launch_blocking: bool | None
    dispatch_threads: int | None
    cpu_op_threads: int | None
    cpu_affinity: bool | None
    quiet_launcher: bool | None
    keep_subnormals: bool | None
    quiet_fork: bool | None

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(VARIABLES))
        if unknown:
            raise TypeError(f"Settings got unknown field(s) {', '.join(unknown)}; the fields are "
                            f"{', '.join(VARIABLES)}")
        for field, default in _DEFAULTS.items():
            object.__setattr__(self, field, values.get(field, default))

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every variable of the table from ``environ`` (``os.environ`` when None), once.

        Raises:
            SettingError: a variable holds a value its kind does not accept (the first one found, in
                table order); a ``ValueError``.
        """
        env = os.environ if environ is None else environ
        values = {}
        for field, variable in VARIABLES.items():
            value = _parse(field, variable, env.get(variable))
            if value is not None:
                values[field] = value
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        """Return a copy with ``changes`` applied (the settings themselves never change)."""
        return Settings(**{**self.as_dict(), **changes})

    def as_dict(self) -> dict[str, Any]:
        """Return ``field -> value`` for every field."""
        return {field: getattr(self, field) for field in VARIABLES}

    def __setattr__(self, name: str, value: Any) -> None:
        raise SettingsFrozenError(f"Settings are frozen: cannot set {name!r}; use settings.replace({name}=...)")

    def __delattr__(self, name: str) -> None:
        raise SettingsFrozenError(f"Settings are frozen: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.as_dict().values()))

    def __repr__(self) -> str:
        changed = ", ".join(f"{field}={value!r}" for field, value in self.as_dict().items()
                            if value != _DEFAULTS[field])
        return f"Settings({changed})"


def adoption_wanted(framework: str, settings: Settings) -> bool:
    """Tell whether ``mindspeed.patch_utils`` is adopted: ``MINDSPEED_MS_ADOPT_MINDSPEED``, else in MindSpore mode.

    ``MINDSPEED_MS_DISABLE=mindspeed_patch_manager`` turns it off too.
    """
    if ADOPTION_PROVIDER in settings.disabled:
        return False
    if settings.adopt_mindspeed is not None:
        return settings.adopt_mindspeed
    return framework == "mindspore"
