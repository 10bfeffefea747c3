"""The adaptation layer's errors: the framework switch, the backend, the providers, the settings object.

The settings' malformed values are the engine's :class:`~mindspeed_ms.engine.errors.SettingError` (its
parsers raise it). Only class definitions: this module is on the adaptor's PyTorch-mode import path.
"""

from __future__ import annotations

from mindspeed_ms.engine.errors import AdaptationError

__all__ = ["FrameworkError", "BackendImportError", "BackendNotInstalledError", "ProviderError", "SettingsFrozenError"]


class FrameworkError(AdaptationError, ValueError):
    """The requested AI framework is not one mindspeed_ms knows."""


class BackendImportError(AdaptationError, ImportError):
    """The MindSpore backend cannot be set up: e.g. a real torch was imported before the adaptor.

    ``.name`` is the module concerned, as on :class:`ImportError`.
    """

    def __init__(self, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


class BackendNotInstalledError(BackendImportError, ModuleNotFoundError):
    """A package the MindSpore backend needs (MSAdapter, MindSpore) is not installed; the message says how."""


class ProviderError(AdaptationError):
    """A patch provider failed while registering; its registrations were withdrawn.

    Attributes:
        provider: the name of the provider that failed.
    """

    def __init__(self, message: str, *, provider: str, target: str | None = None) -> None:
        super().__init__(message, target=target)
        self.provider = provider


class SettingsFrozenError(AdaptationError, AttributeError):
    """A :class:`~mindspeed_ms.adaptation.settings.Settings` was changed in place (use ``replace``)."""
