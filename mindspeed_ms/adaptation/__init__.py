"""The adaptation: settings, framework, providers, runtime, tracing, verification, and the object holding them.

Modules: :mod:`.settings` (every environment variable, read once; the table of them),
:mod:`.framework` (the ``--ai-framework`` decision, the flags providers get), :mod:`.providers`
(discovery: built-in and entry points), :mod:`.runtime` (MindSpore runtime settings per device),
:mod:`.tracing` (call-trace reports), :mod:`.verify` (do the targets still exist and fit),
:mod:`.backend` (MSAdapter first), :mod:`.log` (logging), :mod:`.core` (:class:`Adaptation`),
:mod:`.pytorch_mode` (what executing does in PyTorch mode) and
:mod:`.mindspore_adaptation` (:class:`MindSporeAdaptation`, classmethods over the default Adaptation).

Only re-exports live here, loaded on first use (PEP 562): the adaptor imports this package in
PyTorch mode, where it must cost next to nothing.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False

_EXPORTS = {
    "Adaptation": "core", "default_adaptation": "core", "replace_default_adaptation": "core",
    "adoption_wanted": "settings",
    "MindSporeAdaptation": "mindspore_adaptation", "default_registry": "mindspore_adaptation",
    "pytorch_registry": "mindspore_adaptation", "execute_mindspore": "mindspore_adaptation",
    "Settings": "settings", "SettingsFrozenError": "settings", "LOG_LEVEL_ENV": "settings", "TRACE_ENV": "settings",
    "TRACE_FILE_ENV": "settings", "PARITY_DIR_ENV": "settings", "MISSING_TARGETS_ENV": "settings",
    "FrameworkChoice": "framework", "ProviderArgs": "framework", "decide_framework": "framework",
    "get_ai_framework": "framework", "get_args": "framework",
    "ProviderRun": "providers",
    "prepare_backend": "backend",
    "configure_logging": "log",
    "current_rank": "tracing", "write_trace_report": "tracing",
    "TargetCheck": "verify", "verify_registry": "verify",
}

__all__ = [
    "LOG_LEVEL_ENV", "MISSING_TARGETS_ENV", "PARITY_DIR_ENV", "TRACE_ENV", "TRACE_FILE_ENV", "Adaptation",
    "FrameworkChoice", "MindSporeAdaptation", "ProviderArgs", "ProviderRun", "Settings", "SettingsFrozenError",
    "TargetCheck", "adoption_wanted", "configure_logging", "current_rank", "decide_framework", "default_adaptation",
    "default_registry", "execute_mindspore", "get_ai_framework", "get_args", "prepare_backend", "pytorch_registry",
    "replace_default_adaptation", "verify_registry", "write_trace_report",
]

if TYPE_CHECKING:  # pragma: no cover
    from .backend import prepare_backend
    from .core import Adaptation, default_adaptation, replace_default_adaptation
    from .framework import FrameworkChoice, ProviderArgs, decide_framework, get_ai_framework, get_args
    from .log import configure_logging
    from .mindspore_adaptation import MindSporeAdaptation, default_registry, execute_mindspore, pytorch_registry
    from .providers import ProviderRun
    from .settings import (
        LOG_LEVEL_ENV,
        MISSING_TARGETS_ENV,
        PARITY_DIR_ENV,
        TRACE_ENV,
        TRACE_FILE_ENV,
        Settings,
        SettingsFrozenError,
        adoption_wanted,
    )
    from .tracing import current_rank, write_trace_report
    from .verify import TargetCheck, verify_registry


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mindspeed_ms.adaptation' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

