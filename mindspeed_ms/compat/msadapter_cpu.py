"""Replacements for what MSAdapter / MindSpore's CPU backend lacks, so models run without an NPU.

Two kinds of gap are covered. Missing CPU kernels: ``Tensor.zero_`` (InplaceZero) and
``Tensor.masked_fill_`` (InplaceMaskedFillScalar) raise, as do MSAdapter's ``torch.norm`` with the
default ``p="fro"`` on a vector and allocations on ``torch.cuda.current_device()``. Silent ones:
``Tensor.add_``/``sub_``/``mul_``/``div_``/``exp_`` return a new tensor and leave ``self`` unchanged.
The in-place replacements live in :mod:`mindspeed_ms.compat.inplace` (re-exported here): they
compute out of place and write the result back through views, as PyTorch does.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.inplace import write_through_copy
from mindspeed_ms.compat.inplace_ops import (
    add_,
    bitwise_and_,
    bitwise_or_,
    bitwise_xor_,
    detach_,
    div_,
    exp_,
    fill_,
    floor_divide_,
    iadd,
    ifloordiv,
    imod,
    ipow,
    isub,
    itruediv,
    masked_fill_,
    mul_,
    pow_,
    remainder_,
    sub_,
    zero_,
)

__all__ = [
    "HostStream",
    "current_stream",
    "zero_",
    "masked_fill_",
    "add_",
    "sub_",
    "mul_",
    "div_",
    "exp_",
    "fill_",
    "pow_",
    "detach_",
    "bitwise_and_",
    "bitwise_or_",
    "bitwise_xor_",
    "floor_divide_",
    "remainder_",
    "iadd",
    "isub",
    "itruediv",
    "ifloordiv",
    "ipow",
    "imod",
    "write_through_copy",
    "true_divide",
    "cpu_device_wrapper",
    "frobenius_norm_wrapper",
    "cpu_backend_wrapper",
    "no_accelerator",
    "ACCELERATOR_BACKENDS",
]

#: Process-group backends that need an accelerator; on the CPU backend they become ``gloo``.
ACCELERATOR_BACKENDS = frozenset({"nccl", "hccl"})


def _is_cpu(device: Any) -> bool:
    kind = getattr(device, "type", device)
    return isinstance(kind, str) and kind.lower() == "cpu"


def cpu_device_wrapper(create: Callable[..., Any]) -> Callable[..., Any]:
    """Allocate on the CPU whatever device a tensor-creation function is asked for.

    MSAdapter maps ``"cuda"``, ``"npu"`` and ``torch.cuda.current_device()`` (``"Ascend"``) to the
    Ascend device even on MindSpore's CPU backend, where creating such a tensor fails ("Create device
    context failed"). megatron-core allocates its global memory buffer and collective buffers that way.

    Args:
        create: MSAdapter's creation function taking a ``device=`` keyword (e.g. ``torch.empty``).

    Returns:
        ``create`` with any non-CPU ``device`` replaced by ``"cpu"``, and PyTorch's ``size=`` keyword (MSAdapter's
        ``empty(*size, ...)`` has none: transformers' ``torch.empty(size=shape, device="meta")`` raised TypeError)
        passed as the shape.
    """

    @functools.wraps(create)
    def create_on_cpu(*args: Any, **kwargs: Any) -> Any:
        if "size" in kwargs and not args:
            args = (tuple(kwargs.pop("size")),)
        device = kwargs.get("device")
        if device is not None and not _is_cpu(device):
            kwargs["device"] = "cpu"
        return create(*args, **kwargs)

    return create_on_cpu


def _vector_norm(values: Any, p: Any) -> Any:
    from mindspore import mint, ops

    magnitude = ops.abs(values)
    if p == 2:
        return ops.sqrt(ops.sum(values * values))
    if p == float("inf"):
        return mint.max(magnitude)
    if p == float("-inf"):
        return mint.min(magnitude)
    if p == 0:
        return ops.sum(ops.not_equal(values, 0).astype(values.dtype))
    if p == 1:
        return ops.sum(magnitude)
    return ops.pow(ops.sum(ops.pow(magnitude, p)), 1.0 / p)


def frobenius_norm_wrapper(norm: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``torch.norm(t, p)`` without ``dim`` the norm of all elements, for tensors of any rank.

    Off Ascend, MSAdapter's ``norm`` goes to ``mindspore.ops.norm``, which rejects ``"fro"`` for
    vectors ("ord mode can not be str for vectors") and, for a matrix and a number ``p``, computes the
    *matrix* norm (``p=2``: the spectral norm, 5.465 for ``[[3, 4], [1, 2]]``). PyTorch's ``torch.norm``
    with ``dim=None`` flattens: the Frobenius norm for ``"fro"``, the vector ``p``-norm of all elements for
    a number (5.477). megatron-core's local ``multi_tensor_l2norm`` (gradient clipping without apex)
    calls it that way.

    Args:
        norm: MSAdapter's ``norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None)``.

    Returns:
        ``norm`` that computes the norm over all elements itself when ``dim`` is None and ``p`` is
        ``"fro"`` or a number (``"nuc"`` and reductions over ``dim`` go to MSAdapter).
    """

    @functools.wraps(norm)
    def flattened_norm(input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
                       dtype: Any = None) -> Any:
        numeric = isinstance(p, (int, float)) and not isinstance(p, bool)
        if dim is not None or not (numeric or (isinstance(p, str) and p == "fro")):
            return norm(input, p, dim, keepdim, out=out, dtype=dtype)
        values = input.astype(dtype) if dtype is not None else input
        result = _vector_norm(values, 2 if not numeric else p)
        if keepdim:
            result = result.reshape((1,) * input.ndim)
        if out is not None:
            out.copy_(result)
            return out
        return result

    return flattened_norm


def cpu_backend_wrapper(init_process_group: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``init_process_group(backend="nccl"/"hccl")`` on MindSpore's CPU collectives.

    MSAdapter maps ``"nccl"`` to HCCL, which does not exist on the CPU backend; ``"gloo"`` (MSAdapter's
    MCCL) works under msrun. Scripts written for GPUs (Megatron-LM's ``--distributed-backend nccl``
    default) therefore run unchanged on CPU.

    Args:
        init_process_group: MSAdapter's ``torch.distributed.init_process_group``.

    Returns:
        ``init_process_group`` with an accelerator backend (or none) replaced by ``"gloo"``.
    """

    @functools.wraps(init_process_group)
    def init_cpu_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        if backend is None or str(backend).lower() in ACCELERATOR_BACKENDS:
            backend = "gloo"
        return init_process_group(backend, *args, **kwargs)

    return init_cpu_process_group


def no_accelerator() -> bool:
    """Report that no CUDA-like accelerator is available (``torch.cuda.is_available`` on the CPU backend).

    MSAdapter's ``torch.cuda.is_available()`` returns True unconditionally, so a script that picks its
    device and process-group backend with it calls ``torch.cuda.set_device`` and ``backend="nccl"``,
    which target Ascend and fail when MindSpore computes on the CPU.

    Returns:
        False.
    """
    return False


class HostStream:
    """The one stream of MindSpore's CPU backend: ``torch.cuda.current_stream()`` and ``torch.cuda.Stream()`` there.

    Work is queued in order on it, so waiting on another stream or event is already done; ``synchronize()`` waits
    for what is queued (MindSpore's PyNative executor). Equal to every other ``HostStream``: there is one.
    MSAdapter's ``torch.cuda.Stream()`` is MindSpore's ``Stream``, whose ``StreamCtx`` (``torch.cuda.stream(s)``)
    refuses the CPU device: the first one raised ``AttributeError: 'StreamCtx' object has no attribute 'stream'``
    (megatron's alltoall MoE dispatcher moves its splits to the host inside ``torch.cuda.stream(side_stream)``).
    """

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        del device, priority, kwargs  # torch.cuda.Stream's arguments: one stream, whatever is asked

    def synchronize(self) -> None:
        """Wait until every queued operation has run."""
        from mindspeed_ms.compat.host_memory import synchronize

        synchronize()

    def query(self) -> bool:
        """Whether every queued operation has run (it has, once :meth:`synchronize` returns)."""
        self.synchronize()
        return True

    def wait_stream(self, stream: Any) -> None:
        """Order after ``stream``'s work: one stream, already in order."""
        del stream

    def record_event(self, event: Any = None) -> Any:
        """Record ``event`` (a new :class:`HostEvent` when None) at this point of the stream and return it."""
        recorded = HostEvent() if event is None else event
        recorded.record(self)
        return recorded

    def wait_event(self, event: Any) -> None:
        """Order after ``event``: one stream, already in order."""
        del event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HostStream)

    def __hash__(self) -> int:
        return hash(HostStream)

    def __repr__(self) -> str:
        return "<mindspeed_ms HostStream (MindSpore CPU backend)>"


class HostEvent:
    """An event of the CPU backend's one stream (``torch.cuda.Event()``, ``stream.record_event()``): everything
    before it is queued in order, so waiting is done once the queue has run; ``synchronize()`` runs it (MindSpeed's
    fb-overlap token dispatcher records one and has the dispatch wait on it)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        del enable_timing, blocking, interprocess

    def record(self, stream: Any = None) -> None:
        """Mark this point of the one stream."""
        del stream

    def wait(self, stream: Any = None) -> None:
        """Make ``stream`` wait for the event: one stream, already in order."""
        del stream

    def synchronize(self) -> None:
        """Wait until the work queued before the event has run."""
        HostStream().synchronize()

    def query(self) -> bool:
        """Whether the work before the event has run (it has, once :meth:`synchronize` returns)."""
        self.synchronize()
        return True


def stream(ctx_stream: Any) -> Any:
    """``torch.cuda.stream(s)`` on the CPU backend: a context that changes nothing (there is one stream, and work
    inside it runs in order with everything else, as PyTorch's does once it waits for the side stream). The
    parameter is named as MSAdapter's (MindSpore's ``StreamCtx(ctx_stream)``).

    Raises:
        TypeError: ``s`` is neither ``None`` nor a stream of this backend (what ``torch.cuda.Stream()`` made).
    """
    import contextlib

    if ctx_stream is not None and not isinstance(ctx_stream, HostStream):
        raise TypeError(f"torch.cuda.stream() expects a torch.cuda.Stream or None on the MindSpore CPU backend, got "
                        f"{type(ctx_stream).__name__}")
    return contextlib.nullcontext()


def communication_stream() -> HostStream:
    """``mindspore.runtime.communication_stream()`` on the CPU backend (MindSpore's is None there): the one stream."""
    return HostStream()


def current_stream(device: Any = None) -> HostStream:
    """``torch.cuda.current_stream()`` on the CPU backend: the :class:`HostStream` (MSAdapter's gives ``None``, so
    MindSpeed's alltoall_seq MoE dispatcher failed at ``torch.cuda.current_stream().synchronize()``)."""
    del device
    return HostStream()


def true_divide(self: Any, other: Any, *, rounding_mode: str | None = None, out: Any = None) -> Any:
    """Divide as PyTorch's ``Tensor.__truediv__`` does, with MindSpore's division kernel (``tensor / other``).

    MSAdapter's ``__truediv__`` on the CPU backend divides through NumPy: a 0-d result comes back as a NumPy
    scalar and ``Tensor.from_numpy`` raises ``TypeError: Expected a NumPy array.`` (``tensor(3.) / 2.0``,
    megatron's training loop), integer tensors give float64 (PyTorch: the default float32), and the
    result leaves autograd's graph.

    Args:
        self: the dividend.
        other: a tensor or Python number.
        rounding_mode: MSAdapter's extension (``None``, ``"trunc"`` or ``"floor"``).
        out: MSAdapter's extension: a tensor to copy the quotient into.

    Returns:
        The quotient (``out`` when given).
    """
    from mindspore import ops

    from mindspeed_ms.compat.inplace_checks import INTEGRAL, category

    if rounding_mode is not None and max(category(self), category(other)) <= INTEGRAL:
        from mindspeed_ms.compat.inplace_ops import integer_division

        result = integer_division(self, other, rounding_mode)
    else:
        result = ops.div(self, other, rounding_mode=rounding_mode)
    if out is not None:
        out.copy_(result)
        return out
    return result
