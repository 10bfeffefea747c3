"""PyTorch's in-place semantics on MindSpore's CPU backend: writes that reach every view of a storage.

On the CPU backend (MindSpore 2.7.1 + MSAdapter 0.5.0b1) ``Tensor.copy_`` is in place only on a
tensor that owns its storage. On a view (``view``, ``narrow``, ``transpose``, slices, even ``b[:]``)
it returns a new tensor and leaves both the view and its base unchanged; ``add_``/``sub_``/
``mul_``/``div_``/``exp_`` are out of place on any tensor, and ``fill_`` does nothing on a view.
Reading, however, is aliased: a view and its base share host memory.

:func:`write_back` is the one place every in-place replacement goes through. It tries ``copy_``;
whether the write landed is told by the returned tensor's storage (the same ``data_ptr`` as ``self``
when it did). When it did not, ``self`` is a view, and:

* if autograd records ``self`` (it requires grad and grad mode is on), nothing can reproduce
  PyTorch's rebasing of the view's history on this backend, so :class:`InPlaceOnViewError` names the
  op and the caller's line, and nothing is written;
* otherwise the values are written into the shared host memory at the view's own offset and
  strides, so the view, its base and every other view see them, exactly as in PyTorch.
"""

from __future__ import annotations

import functools
import logging
import os
from types import FrameType
from typing import Any, Callable

from mindspeed_ms.compat import host_kernels
from mindspeed_ms.compat.errors import InPlaceOnViewError
from mindspeed_ms.compat.host_arithmetic import fill_zeros
from mindspeed_ms.compat.host_memory import (
    contiguity_read,
    executor,
    host_array,
    host_memory_reason,
    kept_array,
    tensor_reads,
)
from mindspeed_ms.compat.inplace_checks import (
    check_leaf,
    check_no_internal_overlap,
    check_no_partial_overlap,
    records_grad,
)
from mindspeed_ms.compat.slice_copies import refuse_write
from mindspeed_ms.compat.version_counter import bump_version, mark_aliased_by_data
from mindspeed_ms.engine import passthrough
from mindspeed_ms.engine.sites import caller_frame

__all__ = [
    "DETACHED_ALIAS",
    "owned_float32_on_host",
    "InPlaceOnViewError",
    "data_property",
    "detach_wrapper",
    "add_through_view",
    "call_site",
    "compiled_sum",
    "has_view_adder",
    "refuse_recorded_view_write",
    "view_adder",
    "view_adder_front",
    "write_back",
    "write_through_copy",
    "binary_on_host",
    "broadcasts_to",
    "owns_memory",
    "zero_on_host",
]


logger = logging.getLogger(__name__)


#: Frames under these folders are ours (replacements, the engine's wrappers), not the caller's.
_PACKAGE_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,)


def _is_ours(frame: FrameType) -> bool:
    filename = frame.f_code.co_filename
    return filename.startswith(_PACKAGE_DIRS) or f"{os.sep}mindspore{os.sep}" in filename \
        or f"{os.sep}msadapter{os.sep}" in filename


def call_site() -> str:
    """Return ``file:line in function`` of the first frame outside this package, MindSpore and MSAdapter."""
    frame = caller_frame(skip=_is_ours)
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def refuse_recorded_view_write(op: str, tensor: Any, reason: str) -> None:
    """Raise :class:`InPlaceOnViewError` (``reason``, the caller's call site) when ``tensor`` is a view: for the
    wrappers that run a recorded in-place write on a copy, which cannot reach a view's base; and for a piece that is a
    copy where PyTorch's is a view, or its input (:func:`.slice_copies.refuse_write`)."""
    refuse_write(op, tensor, call_site)
    if _is_view(tensor):
        raise InPlaceOnViewError(op, call_site(), reason)


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def owned_float32_on_host(tensor: Any) -> bool:
    """Whether PyTorch's in-place writes into ``tensor`` can run in its host memory: a contiguous float32 tensor that
    owns its memory, outside autograd's record, on MindSpore's CPU backend (the caller still runs
    :func:`.slice_copies.refuse_write` and counts the write with :func:`.version_counter.bump_version`)."""
    return not (getattr(tensor, "_dtype", None) is not _float32() or records_grad(tensor)
                or host_memory_reason() is not None or _is_view(tensor) or not contiguity_read()(tensor))


def zero_on_host(op: str, tensor: Any) -> bool:
    """Zero ``tensor`` in its host memory and count the write, where that is PyTorch's ``zero_``: a contiguous
    float32 tensor that owns its memory, outside autograd's record, on MindSpore's CPU backend (megatron's
    ``grad_data.zero_()`` of every DDP buffer every step: one pass over the memory, where MindSpore filled a new
    tensor and copied it in: an allocation of the buffer's size and two kernels). The write is counted in the
    tensor's version counter as MindSpore's copy kernel counted it (:func:`.version_counter.bump_version`).

    Returns:
        True when done; False (nothing done) for any other tensor: the caller's kernels then.

    Raises:
        InPlaceOnViewError: ``tensor`` is a piece that is a copy where PyTorch's is a view, or the input of one
            (:func:`.slice_copies.refuse_write`), as the kernels' path raises; nothing written.
    """
    if not owned_float32_on_host(tensor):
        return False
    refuse_write(op, tensor, call_site)
    fill_zeros(host_array(tensor, flat=True))  # after the queued kernels ran (host_array waits for them)
    bump_version(tensor)
    return True


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``target`` itself: no more dimensions, each, aligned from the right, 1 or
    ``target``'s."""
    if len(shape) > len(target):
        return False
    for size, wanted in zip(reversed(shape), reversed(target)):
        if size != 1 and size != wanted:
            return False
    return True


def binary_on_host(op: str, tensor: Any, other: Any, ufunc: str) -> bool:
    """``tensor = tensor <ufunc> other`` in its host memory, the write counted, where that is PyTorch's in-place
    ``op`` (``mul_``, true ``div_``) and the caller ran PyTorch's checks: ``tensor`` as :func:`zero_on_host` takes it,
    ``other`` a Python int or float (cast to float32 first, as PyTorch's kernels cast a scalar operand) or a float32
    tensor outside autograd's record whose shape broadcasts to ``tensor``'s. NumPy's float32 multiply and divide
    round each element as PyTorch's kernels do (IEEE: infinities and NaN of a division by zero included, subnormals
    kept). megatron's cross entropy divides its ``[s, b, vocab]`` exponentials by their sums in place every step:
    MindSpore computed a new tensor (a broadcasting kernel) and copied it in.

    Args:
        op: the in-place method (for a refusal's message).
        tensor: ``self``.
        other: the operand.
        ufunc: NumPy's name of the operation (``"multiply"``, ``"divide"``).

    Returns:
        True when done; False (nothing done) otherwise: the caller's kernels then.
    """
    import numpy as np

    if not owned_float32_on_host(tensor):
        return False
    kind = type(other)
    if kind is float or kind is int:
        with np.errstate(all="ignore"):
            operand = np.float32(other)  # beyond float32's range: an infinity, as PyTorch's cast
    else:
        shape = getattr(other, "_shape", None)
        if (shape is None or getattr(other, "_dtype", None) is not _float32() or records_grad(other)
                or not broadcasts_to(tuple(shape), tuple(tensor._shape))):
            return False
        operand = host_array(other)  # after the queued kernels ran
    refuse_write(op, tensor, call_site)
    values = host_array(tensor)
    with np.errstate(all="ignore"):
        getattr(np, ufunc)(values, operand, out=values)
    bump_version(tensor)
    return True


def _host_write(op: str, view: Any, values: Any) -> None:
    """Write ``values`` into the host memory ``view`` occupies, at its offset and strides."""
    import numpy as np

    reason = host_memory_reason()
    if reason is not None:
        raise InPlaceOnViewError(op, call_site(), f"cannot write through the view: {reason}")
    # asnumpy() waits for ``values``, queued last: every kernel queued before it (those writing or
    # reading this storage included) has run, so the write below lands in order.
    source = np.asarray(values.asnumpy())
    shape = tuple(view.shape)
    if source.shape != shape:
        source = np.broadcast_to(source, shape)
    if source.size == 0:
        return
    host_array(view, sync=False, dtype=source.dtype)[...] = source


def _is_view(tensor: Any) -> bool:
    """Return whether ``tensor`` certainly does not own its storage (``copy_`` would not land in it).

    ``view()``/``reshape`` results name their base; slices of it start past the storage's start. Either
    is enough to skip the ``copy_`` kernel that could not land (a slice at offset 0 is found after it).
    """
    if getattr(tensor, "_base", None) is not None:
        return True
    offset = getattr(tensor, "storage_offset", None)
    return offset is not None and offset() != 0


def owns_memory(tensor: Any) -> bool:
    """Whether ``tensor`` is not certainly a view (:func:`_is_view`): a ``copy_`` kernel lands in its memory."""
    return not _is_view(tensor)


def _copy_into(tensor: Any, values: Any, copy: Callable[..., Any], op: str) -> Any:
    refuse_write(op, tensor, call_site)  # a piece that is a copy where PyTorch's is a view, or its input
    recorded = records_grad(tensor)
    # A tensor that autograd records always tries the kernel: where it lands, autograd sees the write.
    if recorded or host_memory_reason() is not None or not _is_view(tensor):
        out = copy(tensor, values)
        if out is tensor or out.data_ptr() == tensor.data_ptr():
            return tensor
    # copy_ did not (or could not) reach the storage: ``tensor`` is a view of another tensor's memory.
    if recorded:
        raise InPlaceOnViewError(
            op, call_site(), "the view's tensor requires grad, and MindSpore's CPU backend cannot write through "
                              "a view and rebase its autograd history as PyTorch does")
    if records_grad(values) and not getattr(tensor, DETACHED_ALIAS, False):
        raise InPlaceOnViewError(
            op, call_site(), "the value written requires grad and the view's tensor does not: PyTorch makes the "
                              "view and its base record the write, MindSpore's CPU backend cannot rebase a view's "
                              "history, and a host write would drop the gradient silently; write out of place "
                              "(base = torch.cat(...) / base.index_add(...)) or assign with base[index] = value")
    _host_write(op, tensor, values)
    bump_version(tensor)  # MindSpore counts no write that reaches a view through the host: PyTorch's count
    if logger.isEnabledFor(logging.DEBUG):  # the frame walk only when someone is listening
        logger.debug("Tensor.%s wrote through a view at %s", op, call_site())
    return tensor


#: Set on what ``Tensor.data`` and ``Tensor.detach()`` return: an alias of the memory outside autograd (PyTorch: not a
#: view of its base in autograd's sense), so a value that requires grad written into it does not make the base record
#: (megatron's distributed optimizer: ``shard_main_param.data.copy_(shard_model_param)``), and the host write is
#: PyTorch's result for the base.
DETACHED_ALIAS = "_mindspeed_ms_detached_alias"


def data_property() -> property:
    """``Tensor.data`` (MindSpore's getter and setter) whose result is marked :data:`DETACHED_ALIAS`."""
    from mindspore._c_expression import TensorPy

    descriptor = TensorPy.__dict__["data"]
    # MindSpore's getter, its result marked (:func:`~mindspeed_ms.engine.passthrough.mark`: no Python frame where the
    # C extension is built; ~30 reads a training step)
    data = passthrough.mark(descriptor.__get__, DETACHED_ALIAS, True)
    data.__name__ = data.__qualname__ = "data"

    def set_data(self: Any, value: Any) -> None:
        if isinstance(value, TensorPy) and (value.storage_offset() or not value.is_contiguous()):
            # a view (megatron's distributed optimizer: param.data = buffer[start:end].view(shape)): MindSpore's
            # setter keeps its offset and strides for kernels, but the host reads of the tensor it sets (numpy(),
            # tolist(), item(), repr, pickling, deepcopy) read the storage from offset 0, densely; assign_value
            # keeps the view for both, aliasing the storage both ways as PyTorch's .data does; the parameter then
            # shares the buffer's version counter, which PyTorch's does not: writes into the buffer are not counted
            mark_aliased_by_data(value)
            self.assign_value(value)
            return
        descriptor.__set__(self, value)

    return property(data, set_data, None, "The tensor's memory as a tensor outside autograd (PyTorch's .data).")


def detach_wrapper(detach: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.detach``: its result is marked :data:`DETACHED_ALIAS`
    (:func:`~mindspeed_ms.engine.passthrough.mark`: no Python frame where the C extension is built)."""
    return passthrough.mark(detach, DETACHED_ALIAS, True)


#: What every host add reads, resolved once (each a cached call of its own otherwise, five a call): the dtypes whose
#: sum NumPy and MindSpore's CPU kernel round alike (IEEE addition, no flush of subnormals), why tensor memory is
#: not host memory (None on the CPU backend; :func:`host_memory_reason` is cached too), the executor's ``sync``,
#: and MindSpore's readers of an address and strides.
_HOT: list[tuple[Any, ...]] = []

try:  # add_through_view in one C call (setup.py builds it where it can); without it, the Python function below
    from . import _view_add as _compiled_add
except ImportError:
    _compiled_add = None  # type: ignore[assignment]

#: The C module's interface this file is written for (``VIEW_ADD_ABI`` in ``_view_add.c``): an older build in a
#: development tree (built in place, not rebuilt after a pull) is not used.
VIEW_ADD_ABI = 2
if _compiled_add is not None and getattr(_compiled_add, "ABI", None) != VIEW_ADD_ABI:
    _compiled_add = None  # type: ignore[assignment]


def _hot() -> tuple[Any, ...]:
    import mindspore

    _HOT.append(((mindspore.float32, mindspore.float64), host_memory_reason(), executor().sync, *tensor_reads()))
    return _HOT[0]


def has_view_adder() -> bool:
    """Tell whether the C extension of :func:`view_adder` (``mindspeed_ms.compat._view_add``) is built and imports."""
    return _compiled_add is not None


def compiled_sum() -> Callable[[Any, Any], None] | None:
    """Return the C extension's ``host_add(target, source)`` (the sum :func:`view_adder`'s C object makes, over two
    C-contiguous float32/float64 buffers of one size), or None where the extension is not built."""
    return None if _compiled_add is None else _compiled_add.host_add  # type: ignore[no-any-return]


def view_adder_front(op: Callable[..., Any], slow: Callable[..., Any],
                     target: Callable[..., Any]) -> Callable[..., Any]:
    """Return ``slow`` with :func:`view_adder`'s C object asked in front of it, in one C call, where that is what
    ``slow`` does first; else ``slow`` itself.

    ``slow`` is ``Tensor.add_``'s outermost Python wrapper, calling ``op(tensor, other)`` for a call of two
    positional arguments; ``target`` is the function whose first step is ``view_adder()(tensor, other)``
    (:func:`mindspeed_ms.compat.inplace_ops.add_`). The front (``_view_add.InplaceAdd``) applies to float32
    tensors when ``op`` is ``target``, or reaches it through pass-through forks
    (:func:`mindspeed_ms.engine.passthrough.fork`) each told by the first argument's dtype and going the slow way
    for another dtype than float32: there ``tensor.add_(other)`` is ``tensor`` when the C object made the sum, else
    ``slow``'s call (which asks the C object again, and takes every other way). Where the extension is not built,
    or the C object does not apply (not host memory), ``slow`` itself.
    """
    import mindspore

    adder = view_adder()
    if _compiled_add is None or not isinstance(adder, _compiled_add.ViewAdd):
        return slow
    float32 = mindspore.float32
    link: Any = op
    while link is not target:
        if (type(link).__name__ != "Fork" or getattr(link, "attr", None) != "_dtype" or link.cls is not None
                or link.test is not None or link.slow_when is None or link.slow_when is float32):
            return slow
        link = link.func
    front = _compiled_add.InplaceAdd(adder, slow, float32)
    functools.update_wrapper(front, slow)
    return front  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=2)
def view_adder(compiled: bool = True) -> Callable[[Any, Any], bool]:
    """Return :func:`add_through_view`, as one C call where the extension is built and ``compiled`` (the default).

    The C object (``_view_add.ViewAdd``) makes the same reads and tests in the same order and the same IEEE sums;
    it is built once, with the dtypes, the executor's ``sync``, MindSpore's readers and :func:`records_grad`.
    Where tensor memory is not host memory it does not apply (the Python function says False every call).
    """
    if not compiled or _compiled_add is None:
        return add_through_view
    import mindspore

    if host_memory_reason() is not None:
        return add_through_view
    address, stride = tensor_reads()
    return _compiled_add.ViewAdd(mindspore.float32, mindspore.float64, executor().sync,  # type: ignore[no-any-return]
                                 address, stride, records_grad)


def add_through_view(tensor: Any, other: Any) -> bool:
    """Add ``other`` to the view ``tensor`` in its host memory; return False (nothing done) where it does not apply.

    Applies where the sum would otherwise be computed by a kernel and then written through the view's host
    memory anyway (:func:`write_back`): ``tensor`` is a contiguous view on the CPU backend that autograd does
    not record, ``other`` a contiguous tensor of the same shape and float dtype that autograd does not record
    either, the two apart in memory or the same memory (DDP's ``main_grad.add_(grad)`` each backward). Then
    PyTorch refuses nothing (no cast, no overlap, no leaf, no broadcast), so its checks are not run: one
    NumPy pass, the same IEEE sums as the kernel, no temporary, no kernel. Anything else returns False and
    the caller takes the general path.
    """
    # MindSpore's own attributes, read directly (no property, no getattr call: ~30 calls a step under DDP), and
    # identity tests of its dtypes (singletons)
    dtypes, reason, sync, address, stride = _HOT[0] if _HOT else _hot()
    try:
        dtype = other._dtype
        if dtype is not tensor._dtype or dtype not in dtypes:
            return False
        if tensor._base is None and not _is_view(tensor):  # _is_view's first test, inline
            return False
        if (reason is not None or (tensor.requires_grad and records_grad(tensor))
                or (other.requires_grad and records_grad(other))):
            return False
        # the arrays host_array handed out before, looked up without a call of ours (DDP's views and gradients
        # come back every step); host_array builds them otherwise
        sync()  # first (synchronize(), inline): a queued kernel's output has its memory once it ran
        begin, other_begin = address(tensor), address(other)
        dtype_id = id(dtype)  # what the kept arrays' keys hold (host_memory: a dtype's pybind11 hash is slow)
        target = kept_array((begin, tuple(tensor._shape), tuple(stride(tensor)), dtype_id, None))
        if target is None:
            target = host_array(tensor, sync=False)
        source = kept_array((other_begin, tuple(other._shape), tuple(stride(other)), dtype_id, None))
        if source is None:
            source = host_array(other, sync=False)
    except AttributeError:  # not MindSpore tensors: the general path
        return False
    if target.shape != source.shape or not (target.flags.c_contiguous and source.flags.c_contiguous):
        return False
    if begin != other_begin and begin < other_begin + source.nbytes and other_begin < begin + target.nbytes:
        return False  # partial overlap: the general path raises PyTorch's error
    host_kernels.add(target, source)
    return True


def _plain_copy(tensor: Any, values: Any) -> Any:
    return unpatched_copy()(tensor, values)


@functools.lru_cache(maxsize=1)
def unpatched_copy() -> Callable[..., Any]:
    """Return MindSpore's own ``Tensor.copy_`` under our write-through wrapper (no view write-back)."""
    from mindspore.common.tensor import Tensor

    copy = Tensor.copy_
    while getattr(copy, "_mindspeed_ms_write_through", False):
        copy = copy.__wrapped__
    return copy  # type: ignore[no-any-return]


def write_back(op: str, tensor: Any, result: Any) -> Any:
    """Make ``result`` the contents of ``tensor`` in place, through views, as PyTorch's ``op`` would.

    Args:
        op: the in-place method being reproduced (for the error message).
        tensor: the tensor PyTorch would modify (``self``).
        result: the out-of-place result, broadcastable to ``tensor``'s shape.

    Returns:
        ``tensor``.

    Raises:
        InPlaceOnViewError: ``tensor`` is a view that autograd records, or off-CPU view; nothing written.
    """
    # MindSpore's own dtype attributes first: the same dtype object (the common case) needs neither property read
    # nor pybind11's comparison
    same = getattr(result, "_dtype", None)
    if same is None or same is not getattr(tensor, "_dtype", None):
        if result.dtype != tensor.dtype:
            result = result.astype(tensor.dtype)
    return _copy_into(tensor, result, _plain_copy, op)


def write_through_copy(copy: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``Tensor.copy_`` write through views to the shared storage (wrap of the original).

    Args:
        copy: MindSpore/MSAdapter's ``Tensor.copy_(self, src, non_blocking=False)``.

    Returns:
        ``copy_`` that returns ``self`` with ``src`` written into it, view or not.
    """

    @functools.wraps(copy)
    def copy_(self: Any, src: Any, non_blocking: bool = False) -> Any:
        def bound(tensor: Any, values: Any) -> Any:
            return copy(tensor, values, non_blocking)

        if src is self:
            return self  # PyTorch returns at once when src is self
        check_leaf("copy_", self)
        check_no_internal_overlap("copy_", self)
        check_no_partial_overlap("copy_", self, src)
        if getattr(src, "dtype", self.dtype) != self.dtype and hasattr(src, "astype"):
            src = src.astype(self.dtype)
        return _copy_into(self, src, bound, "copy_")

    copy_._mindspeed_ms_write_through = True  # type: ignore[attr-defined]  # lets unpatched_copy unwrap it
    return copy_


