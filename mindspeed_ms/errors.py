"""Every error mindspeed_ms raises, in one place: a facade for users, imported by nothing inside the package.

Every error derives from :class:`AdaptationError` and, where one fits, from the builtin a caller
would naturally catch (``LookupError`` for a missing target, ``ValueError`` for a malformed
registration, ``TypeError`` for an incompatible signature). Each carries the dotted ``target``
it is about (``None`` when it is about no single target).

Each layer defines its errors at its bottom: the engine's in :mod:`mindspeed_ms.engine.errors`, the
adaptation's (framework switch, backend, providers, settings) in :mod:`mindspeed_ms.adaptation.errors`, the
parity tool's in
:mod:`mindspeed_ms.parity.errors`, the migration tools' in :mod:`mindspeed_ms.migrate.errors`, the bootstrap's
in :mod:`mindspeed_ms.bootstrap.launch`, the patch manager's in :mod:`mindspeed_ms.patch_manager.errors`,
the compat code's in :mod:`mindspeed_ms.compat.errors`, and the ops' in :mod:`mindspeed_ms.ops.errors`
(loaded on first use: that package imports MindSpore). Code inside mindspeed_ms imports them from there,
never from here.
"""

from __future__ import annotations

from mindspeed_ms.adaptation.errors import (
    BackendImportError,
    BackendNotInstalledError,
    FrameworkError,
    ProviderError,
    SettingsFrozenError,
)
from mindspeed_ms.bootstrap.launch import CommandNotFoundError, RunCommandError
from mindspeed_ms.compat.errors import (
    AscendRuntimeUnavailableError,
    BucketSyncError,
    CheckpointFormatError,
    ClipGradTypeError,
    CollectiveError,
    DatasetHelpersUnavailableError,
    DTypeNotSupportedError,
    FlushDenormalModeError,
    GradDTypeError,
    IndexArgumentError,
    IndexOutOfRangeError,
    InPlaceOnViewError,
    InPlaceWriteError,
    MemoryFormatUnsupportedError,
    OperandTypeError,
    ProcessGroupNotInitializedError,
    RandomStateError,
    RetainGradError,
    TorchRefusalError,
    UnsupportedOpOptionError,
    UnsupportedOptimizerFeatureError,
    ViewRebaseError,
)
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
from mindspeed_ms.parity.errors import ParityMismatchError, ParityNoStepError, ParityRunError, ParitySetupError
from mindspeed_ms.patch_manager.errors import AdoptionError, WrapperNotFoundError

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from mindspeed_ms.ops.errors import OpArgumentError, OpDTypeError, OpError, OpUnavailableError

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
    "OpUnavailableError",
    "FeatureTableError",
    "InPlaceOnViewError",
    "InPlaceWriteError",
    "UnsupportedOpOptionError",
    "UnsupportedOptimizerFeatureError",
    "SettingsFrozenError",
    "ParityMismatchError",
    "ParitySetupError",
    "ParityRunError",
    "WrapperNotFoundError",
    "AdoptionError",
    "ParityNoStepError",
    "DTypeNotSupportedError",
    "MemoryFormatUnsupportedError",
    "ViewRebaseError",
    "FlushDenormalModeError",
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

#: The ops' errors: their package imports MindSpore, which ``import mindspeed_ms.errors`` must not need.
_OPS_ERRORS = frozenset({"OpError", "OpArgumentError", "OpDTypeError", "OpUnavailableError"})


def __getattr__(name: str) -> object:
    if name in _OPS_ERRORS:
        from mindspeed_ms.ops import errors as ops_errors

        value = getattr(ops_errors, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
