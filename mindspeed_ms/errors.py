"""Every error mindspeed_ms raises, in one place.

Every error derives from :class:`AdaptationError` and, where one fits, from the builtin a caller
would naturally catch (``LookupError`` for a missing target, ``ValueError`` for a malformed
registration, ``TypeError`` for an incompatible signature). Each carries the dotted ``target``
it is about (``None`` when it is about no single target).

The engine's errors are defined in :mod:`mindspeed_ms.engine.errors`, the ops' in
:mod:`mindspeed_ms.ops.errors` (loaded on first use: that package needs MindSpore) and the
migration tools' in :mod:`mindspeed_ms.migrate.errors`; those of the compat code (CPU semantics, collectives,
optimizers, checkpoints), the runtime settings, the parity tool, the bootstrap and the patch manager beside their
code (all loaded on first use); the adaptation layer's (providers, framework switch, backend) are defined here.
All are importable from this module.
"""

from __future__ import annotations

from mindspeed_ms.engine.errors import (
    AdaptationError,
    BlockedModuleError,
    PatchApplyError,
    PatchConflictError,
    PatchValidationError,
    SettingError,
    SignatureMismatchError,
    TargetNotFoundError,
)
from mindspeed_ms.migrate.errors import FeatureTableError, LaunchScriptError, ScriptSyntaxError

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from mindspeed_ms.bootstrap.launch import CommandNotFoundError, RunCommandError
    from mindspeed_ms.compat.conformance_misc import ProcessGroupNotInitializedError, TorchRefusalError
    from mindspeed_ms.compat.cpu_collectives import CollectiveError
    from mindspeed_ms.compat.grad_clone import GradDTypeError, RetainGradError
    from mindspeed_ms.compat.index_ops import IndexArgumentError, IndexOutOfRangeError
    from mindspeed_ms.compat.inplace import InPlaceOnViewError
    from mindspeed_ms.compat.inplace_checks import InPlaceWriteError
    from mindspeed_ms.compat.megatron_parallel import BucketSyncError
    from mindspeed_ms.compat.megatron_speed import ClipGradTypeError
    from mindspeed_ms.compat.megatron_training import AscendRuntimeUnavailableError, DatasetHelpersUnavailableError
    from mindspeed_ms.compat.msadapter_cpu_ops import UnsupportedOpOptionError
    from mindspeed_ms.compat.optim import UnsupportedOptimizerFeatureError
    from mindspeed_ms.compat.promotion import DTypeNotSupportedError, OperandTypeError
    from mindspeed_ms.compat.random_state import RandomStateError
    from mindspeed_ms.compat.serialization import CheckpointFormatError
    from mindspeed_ms.ops.errors import OpArgumentError, OpDTypeError, OpError
    from mindspeed_ms.parity.capture import ParityMismatchError
    from mindspeed_ms.parity.runner import ParityNoStepError, ParityRunError, ParitySetupError
    from mindspeed_ms.patch_manager.carry_over import AdoptionError
    from mindspeed_ms.patch_manager.manager import WrapperNotFoundError
    from mindspeed_ms.runtime import RuntimeSettingError

__all__ = [
    "AdaptationError",
    "ScriptSyntaxError",
    "LaunchScriptError",
    "PatchValidationError",
    "TargetNotFoundError",
    "PatchConflictError",
    "SignatureMismatchError",
    "PatchApplyError",
    "BlockedModuleError",
    "SettingError",
    "ProviderError",
    "FrameworkError",
    "BackendImportError",
    "BackendNotInstalledError",
    "OpError",
    "OpArgumentError",
    "OpDTypeError",
    "FeatureTableError",
    "InPlaceOnViewError",
    "InPlaceWriteError",
    "UnsupportedOpOptionError",
    "UnsupportedOptimizerFeatureError",
    "RuntimeSettingError",
    "ParityMismatchError",
    "ParitySetupError",
    "ParityRunError",
    "WrapperNotFoundError",
    "AdoptionError",
    "ParityNoStepError",
    "DTypeNotSupportedError",
    "RandomStateError",
    "OperandTypeError",
    "TorchRefusalError",
    "ProcessGroupNotInitializedError",
    "CheckpointFormatError",
    "CollectiveError",
    "DatasetHelpersUnavailableError",
    "AscendRuntimeUnavailableError",
    "IndexOutOfRangeError",
    "IndexArgumentError",
    "ClipGradTypeError",
    "GradDTypeError",
    "RetainGradError",
    "BucketSyncError",
    "RunCommandError",
    "CommandNotFoundError",
]

#: Errors defined beside the code that raises them, loaded on first use (the ops' package imports MindSpore;
#: the others import this module, so an eager import here would be circular).
_LAZY = {
    "OpError": "mindspeed_ms.ops.errors",
    "OpArgumentError": "mindspeed_ms.ops.errors",
    "OpDTypeError": "mindspeed_ms.ops.errors",
    "InPlaceOnViewError": "mindspeed_ms.compat.inplace",
    "InPlaceWriteError": "mindspeed_ms.compat.inplace_checks",
    "UnsupportedOpOptionError": "mindspeed_ms.compat.msadapter_cpu_ops",
    "UnsupportedOptimizerFeatureError": "mindspeed_ms.compat.optim",
    "RuntimeSettingError": "mindspeed_ms.runtime",
    "ParityMismatchError": "mindspeed_ms.parity.capture",
    "ParitySetupError": "mindspeed_ms.parity.runner",
    "ParityRunError": "mindspeed_ms.parity.runner",
    "WrapperNotFoundError": "mindspeed_ms.patch_manager.manager",
    "AdoptionError": "mindspeed_ms.patch_manager.carry_over",
    "ParityNoStepError": "mindspeed_ms.parity.runner",
    "DTypeNotSupportedError": "mindspeed_ms.compat.promotion",
    "RandomStateError": "mindspeed_ms.compat.random_state",
    "OperandTypeError": "mindspeed_ms.compat.promotion",
    "TorchRefusalError": "mindspeed_ms.compat.conformance_misc",
    "ProcessGroupNotInitializedError": "mindspeed_ms.compat.conformance_misc",
    "CheckpointFormatError": "mindspeed_ms.compat.serialization",
    "CollectiveError": "mindspeed_ms.compat.cpu_collectives",
    "DatasetHelpersUnavailableError": "mindspeed_ms.compat.megatron_training",
    "AscendRuntimeUnavailableError": "mindspeed_ms.compat.megatron_training",
    "IndexOutOfRangeError": "mindspeed_ms.compat.index_ops",
    "IndexArgumentError": "mindspeed_ms.compat.index_ops",
    "ClipGradTypeError": "mindspeed_ms.compat.megatron_speed",
    "GradDTypeError": "mindspeed_ms.compat.grad_clone",
    "RetainGradError": "mindspeed_ms.compat.grad_clone",
    "BucketSyncError": "mindspeed_ms.compat.megatron_parallel",
    "RunCommandError": "mindspeed_ms.bootstrap.launch",
    "CommandNotFoundError": "mindspeed_ms.bootstrap.launch",
}


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is not None:
        import importlib

        value = getattr(importlib.import_module(module_name), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ProviderError(AdaptationError):
    """A patch provider failed while registering; its registrations were withdrawn.

    Attributes:
        provider: the name of the provider that failed.
    """

    def __init__(self, message: str, *, provider: str, target: str | None = None) -> None:
        super().__init__(message, target=target)
        self.provider = provider


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
