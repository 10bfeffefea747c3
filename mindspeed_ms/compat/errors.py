"""Errors of :mod:`mindspeed_ms.compat`: what a replacement refuses, as PyTorch refuses it, or cannot do here.

Each is raised by the replacement named in its docstring (``mindspeed_ms.compat.<module>``, which imports it
from here) and re-exported from :mod:`mindspeed_ms.errors`. This module imports nothing heavy: no torch, no
MSAdapter, no NumPy.
"""

from __future__ import annotations

import pickle

from mindspeed_ms.engine.errors import AdaptationError

from .refusal_errors import (
    OpIndexRefusedError,
    OpLookupRefusedError,
    OpOverflowRefusedError,
    OpRefusedError,
    OpShapeRefusedError,
    OpTypeRefusedError,
    OpValueRefusedError,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

__all__ = [
    "TorchRefusalError",
    "ProcessGroupNotInitializedError",
    "CollectiveError",
    "GradDTypeError",
    "RetainGradError",
    "IndexOutOfRangeError",
    "IndexBoundsError",
    "IndexArgumentError",
    "InPlaceOnViewError",
    "InPlaceWriteError",
    "BucketSyncError",
    "ClipGradTypeError",
    "DatasetHelpersUnavailableError",
    "AscendRuntimeUnavailableError",
    "UnsupportedOpOptionError",
    "UnsupportedOptimizerFeatureError",
    "DTypeNotSupportedError",
    "MemoryFormatUnsupportedError",
    "ViewRebaseError",
    "OperandTypeError",
    "RandomStateError",
    "RandomStateTypeError",
    "RandomGeneratorTypeError",
    "OpRefusedError",
    "OpShapeRefusedError",
    "OpTypeRefusedError",
    "OpLookupRefusedError",
    "OpIndexRefusedError",
    "OpValueRefusedError",
    "OpOverflowRefusedError",
    "CheckpointFormatError",
    "FlushDenormalModeError",
]


class TorchRefusalError(AdaptationError, RuntimeError):
    """PyTorch refuses this call, and so do we (MindSpore would have computed something else); nothing was computed.

    The message is PyTorch's.

    Attributes:
        op: the op, e.g. ``"Tensor.view"``.
    """

    def __init__(self, op: str, message: str) -> None:
        super().__init__(message)
        self.op = op


class ProcessGroupNotInitializedError(AdaptationError, AssertionError):
    """``destroy_process_group()`` without a default process group (PyTorch asserts the same); nothing was done."""


class CollectiveError(AdaptationError, RuntimeError):
    """A ``torch.distributed`` call that cannot give what PyTorch gives on this backend; nothing was sent.

    Raised on every rank alike, before any communication, so the ranks stay in step.

    Attributes:
        op: the collective, e.g. ``"all_reduce"``.
    """

    def __init__(self, op: str, problem: str, remedy: str) -> None:
        self.op = op
        super().__init__(f"torch.distributed.{op}: {problem}; {remedy}")


class GradDTypeError(AdaptationError, RuntimeError):
    """Only floating point and complex tensors can require gradients (PyTorch's refusal; the message is its).

    Attributes:
        dtype: the refused dtype, e.g. ``"Int64"``.
    """

    def __init__(self, dtype: str) -> None:
        super().__init__(f"only Tensors of floating point dtype can require gradients (got {dtype}; cast the "
                         f"tensor with .float() first)", target="Tensor.requires_grad_")
        self.dtype = dtype


class RetainGradError(AdaptationError, RuntimeError):
    """``retain_grad()`` on a tensor that does not require grad (PyTorch's refusal; the message is its)."""

    def __init__(self) -> None:
        super().__init__("can't retain_grad on Tensor that has requires_grad=False", target="Tensor.retain_grad")


class IndexOutOfRangeError(AdaptationError, IndexError):
    """An index is outside the indexed dimension, as PyTorch reports it; nothing was written.

    Attributes:
        op: the operation, e.g. ``"index_put_"``.
        index: the offending index value.
        size: the size of the indexed dimension.
    """

    def __init__(self, op: str, index: int, dim: int, size: int) -> None:
        self.op, self.index, self.dim, self.size = op, index, dim, size
        super().__init__(f"{op}(): index {index} is out of bounds for dimension {dim} with size {size}")


class IndexBoundsError(AdaptationError, RuntimeError):
    """An index tensor holds a value outside the indexed dimension of gather, scatter or index_add_, which PyTorch
    refuses with RuntimeError (index_select and indexing: :class:`IndexOutOfRangeError`); nothing was written.

    Attributes:
        op: the operation, e.g. ``"gather"``.
        index: the offending index value.
        size: the size of the indexed dimension.
    """

    def __init__(self, op: str, index: int, dim: int, size: int) -> None:
        self.op, self.index, self.dim, self.size = op, index, dim, size
        super().__init__(f"{op}(): index {index} is out of bounds for dimension {dim} with size {size}")


class IndexArgumentError(AdaptationError, IndexError):
    """Indices PyTorch refuses (dtype, mask shape, count, broadcast), with PyTorch's message; nothing was written.

    Attributes:
        op: the operation, e.g. ``"index_put_"``.
    """

    def __init__(self, op: str, message: str) -> None:
        self.op = op
        super().__init__(message)


class InPlaceOnViewError(AdaptationError, RuntimeError):
    """An in-place op on a view cannot be reproduced on this backend; nothing was written.

    Raised where PyTorch would update a view *and* record the write for autograd (the view's tensor
    requires grad): MindSpore's CPU backend can neither write through the view nor rebase its
    gradient history. Compute out of place instead (``x = x.masked_fill(mask, v)``), or patch the
    calling function.

    Attributes:
        op: the in-place method, e.g. ``"masked_fill_"``.
        call_site: ``file:line in function`` of the caller.
    """

    def __init__(self, op: str, call_site: str, reason: str) -> None:
        self.op = op
        self.call_site = call_site
        super().__init__(
            f"Tensor.{op} on a view at {call_site}: {reason}; nothing was written. Compute it out of place "
            f"(e.g. 'x = x.{op.rstrip('_')}(...)') or patch the calling function")


class ViewRebaseError(AdaptationError, RuntimeError):
    """A backward pass reached a view whose base was written in place after the view was taken
    (``p = y[1]; y.mul_(3); p.sum().backward()``). PyTorch rebases the view's history on the write; MindSpore's
    autograd cannot (its engine stops with "The pointer[base_shape] is null"). Take the view after the write, or
    ``clone()`` it before the write. Gradients of other inputs may have been accumulated before the stop.
    """

    def __init__(self, op: str) -> None:
        super().__init__(
            f"{op}: the graph holds a view whose base was modified in place after the view was taken; MindSpore's "
            f"autograd cannot rebase the view's history (PyTorch does). Take the view after the in-place write, or "
            f"clone() it before; the .grad of leaves reached before the stop may already hold their part",
            target=op)


class InPlaceWriteError(AdaptationError, RuntimeError):
    """PyTorch refuses this in-place write, and so do we (or this backend cannot do it); nothing was written.

    The message is PyTorch's where PyTorch refuses. Compute out of place (``x = x.op(...)``), ``clone()``
    the overlapping tensor, or cast first, as the message asks.

    Attributes:
        op: the in-place method, e.g. ``"div_"``.
        rule: ``"cast"``, ``"internal_overlap"``, ``"partial_overlap"``, ``"leaf"``, ``"shape"``,
            ``"argument"``, or ``"unsupported"`` (this backend cannot, PyTorch can).
    """

    def __init__(self, op: str, rule: str, message: str) -> None:
        super().__init__(f"{message} (Tensor.{op})", target=f"Tensor.{op}")
        self.op = op
        self.rule = rule


class BucketSyncError(AdaptationError, RuntimeError):
    """A DDP bucket group was asked to communicate in a state megatron itself asserts against.

    Attributes:
        operation: ``"start_grad_sync"`` or ``"start_param_sync"``.
    """

    def __init__(self, operation: str, problem: str) -> None:
        self.operation = operation
        super().__init__(f"{operation} on the CPU backend: {problem}")


class ClipGradTypeError(AdaptationError, TypeError):
    """A gradient to clip is not float32 (megatron asserts ``torch.cuda.FloatTensor`` there).

    Attributes:
        dtype: the gradient's dtype.
    """

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype
        super().__init__(f"clip_grad_by_total_norm_fp32: gradients must be float32 (megatron's assertion), got "
                         f"{dtype}; keep main gradients in float32 (DDP's grad buffer is float32 unless "
                         f"grad_reduce_in_fp32 is off with bf16)")


class DatasetHelpersUnavailableError(AdaptationError, ImportError):
    """Megatron's C++ dataset helpers (``helpers_cpp``) are neither built nor shipped by an installed wheel.

    Attributes:
        searched: the folders searched for the extension module.
        module: the extension module, e.g. ``"megatron.core.datasets.helpers_cpp"``.
        distribution: the distribution whose wheel ships it prebuilt, e.g. ``"megatron-core"``.
    """

    def __init__(self, searched: list[str], *, module: str, distribution: str) -> None:
        super().__init__(
            f"{module} is not importable: no built extension in {searched or 'megatron.core.datasets'} and "
            f"no installed {distribution} distribution ships one; install the wheel beside the sources "
            f"('pip install --no-deps megatron-core==0.12.1' carries it prebuilt) or build it in the source tree "
            f"with 'make -C <megatron/core/datasets>' (needs pybind11)", target="megatron.core.datasets.utils"
                                                                                 ".compile_helpers")
        self.searched = searched
        self.module = module
        self.distribution = distribution


class AscendRuntimeUnavailableError(AdaptationError, RuntimeError):
    """CANN's ``acl`` runtime was called on a machine without an Ascend NPU.

    Attributes:
        function: the ``acl`` function called, e.g. ``"acl.get_soc_name"``.
    """

    def __init__(self, function: str) -> None:
        super().__init__(
            f"{function}() was called, but CANN's acl runtime is not available (no Ascend NPU, MindSpore computes "
            f"on the CPU): mindspeed_ms provides an importable 'acl' so MindSpeed's modules load, not a working "
            f"one; turn off the NPU-only feature that calls it (e.g. --enable-share-memory, the MoE overlap and "
            f"adaptive-memory features)", target=function)
        self.function = function


class UnsupportedOpOptionError(AdaptationError, NotImplementedError):
    """A torch op was called with an option its MindSpore replacement cannot honour; nothing was computed.

    Attributes:
        op: the op, e.g. ``"torch.nn.functional.embedding"``.
        option: the option, e.g. ``"max_norm"``.
    """

    def __init__(self, op: str, option: str, what_to_do: str) -> None:
        super().__init__(f"{op}: {option} is {what_to_do}", target=op)
        self.op = op
        self.option = option


class UnsupportedOptimizerFeatureError(AdaptationError, NotImplementedError):
    """An Adam/AdamW option or parameter that the MindSpore implementation cannot honour.

    Attributes:
        optimizer: the optimizer class name (``"Adam"`` or ``"AdamW"``).
        feature: the option or the kind of parameter, e.g. ``"differentiable=True"``.
    """

    def __init__(self, optimizer: str, feature: str, reason: str) -> None:
        super().__init__(f"torch.optim.{optimizer}: {feature} is not supported under MSAdapter: {reason}",
                         target=f"msadapter.optim.{optimizer.lower()}.{optimizer}")
        self.optimizer = optimizer
        self.feature = feature


class DTypeNotSupportedError(AdaptationError, NotImplementedError):
    """PyTorch refuses this op on this dtype, and so do we (the message is PyTorch's); nothing was computed.

    A ``NotImplementedError`` is also a ``RuntimeError``: code catching either, as PyTorch's callers do,
    catches it.

    Attributes:
        op: the op, e.g. ``"torch.abs"``.
        dtype: the refused dtype, e.g. ``"Bool"``.
    """

    def __init__(self, op: str, dtype: str, message: str) -> None:
        super().__init__(f"{message} ({op}; cast the input first, as PyTorch asks)", target=op)
        self.op = op
        self.dtype = dtype


class MemoryFormatUnsupportedError(AdaptationError, RuntimeError):
    """A channels-last layout was asked for (``memory_format=torch.channels_last``): MSAdapter's tensors are always
    row-major on the MindSpore backend, so it cannot be made; nothing was computed (``compat.memory_formats``)."""


class OperandTypeError(AdaptationError, TypeError):
    """PyTorch raises ``TypeError`` for this operand dtype, and so do we (the message is PyTorch's).

    Attributes:
        op: the op, e.g. ``"Tensor.__invert__"``.
    """

    def __init__(self, op: str, message: str) -> None:
        super().__init__(f"{message} ({op})", target=op)
        self.op = op


class RandomStateError(AdaptationError, RuntimeError):
    """A random state cannot be taken or restored exactly (PyTorch raises RuntimeError for a bad state).

    Attributes:
        reason: ``"size"``, ``"format"``, ``"kernel"`` or ``"slots"``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, target="torch.set_rng_state")
        self.reason = reason


class RandomStateTypeError(RandomStateError, TypeError):
    """``torch.set_rng_state`` of something that is not a uint8 tensor (PyTorch raises TypeError there)."""


class CheckpointFormatError(AdaptationError, pickle.UnpicklingError):
    """A checkpoint file that this reader cannot turn into MSAdapter objects.

    Attributes:
        source: the file (or ``"<stream>"``).
    """

    def __init__(self, source: str, message: str) -> None:
        self.source = source
        super().__init__(f"torch.load({source}): {message}")


class RandomGeneratorTypeError(AdaptationError, TypeError):
    """``generator=`` of something that is not a ``torch.Generator`` (PyTorch raises TypeError there).

    Attributes:
        op: the random op, e.g. ``"torch.rand"``.
    """

    def __init__(self, op: str, message: str) -> None:
        super().__init__(message, target=op)
        self.op = op


class FlushDenormalModeError(AdaptationError, RuntimeError):
    """``torch.set_flush_denormal`` of something that is not a bool (PyTorch raises RuntimeError, its message).

    Raised by :func:`mindspeed_ms.compat.fp_mode.set_flush_denormal`.

    Attributes:
        given: the type name of what was passed.
    """

    def __init__(self, given: str) -> None:
        super().__init__(f"flush_denormal expects a bool, but got {given}", target="torch.set_flush_denormal")
        self.given = given
