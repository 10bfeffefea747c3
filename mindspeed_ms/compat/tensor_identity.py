"""PyTorch's identity rules for conversions, and ``torch.cat``'s promotion, on MindSpore's CPU backend.

PyTorch's ``x.to(dtype)``/``x.to("cpu")``/``x.cpu()`` return ``x`` itself when nothing changes, so an in-place
write to the result reaches ``x``; MSAdapter returns a copy (silent). ``torch.cat`` of mixed dtypes promotes
(PyTorch's ``result_type``); MindSpore's Concat kernel takes one dtype and fails.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.inplace_checks import category

__all__ = ["identity_to_wrapper", "identity_cpu_wrapper", "cat_promotion_wrapper"]


def identity_to_wrapper(to: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``Tensor.to`` return the tensor itself when neither dtype nor shape changes (PyTorch: an alias).

    Every tensor lives on the host on the CPU backend, so a device change is none; ``copy=True`` still copies. A
    dtype conversion of a permuted dense tensor (``x.t().to(torch.int32)``) keeps its strides as PyTorch's
    ``preserve_format`` does (MindSpore's Cast wrote a contiguous tensor): converted in its memory order, permuted
    back.
    """

    @functools.wraps(to)
    def to_or_self(self: Any, *args: Any, **kwargs: Any) -> Any:
        # A move to an accelerator (``device=torch.cuda.current_device()``, "cuda", "npu", an ordinal) stays on
        # the host: the CPU backend's device rule (README, "Device reported on CPU"); MSAdapter would try to
        # create an Ascend context and fail (megatron's MoE router moves its weight that way on every forward).
        if "device" in kwargs and _is_accelerator(kwargs["device"]):
            kwargs["device"] = "cpu"
        if args and _is_accelerator(args[0]):
            args = ("cpu", *args[1:])
        order = _permuted_order(self) if _converts_dtype(args, kwargs) else None
        if order is not None:  # PyTorch's preserve_format: a permuted dense layout keeps its strides
            inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
            return to(self.permute(*order), *args, **kwargs).permute(*inverse)
        result = to(self, *args, **kwargs)
        if kwargs.get("copy") or result is self:
            return result
        try:  # MindSpore's own attributes (what ``dtype`` and ``shape`` read, without their Python frames)
            same = (result._dtype is self._dtype or result._dtype == self._dtype) and \
                tuple(result._shape) == tuple(self._shape)
        except AttributeError:
            same = result.dtype == self.dtype and tuple(result.shape) == tuple(self.shape)
        return self if same else result

    return to_or_self


def _converts_dtype(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``to``'s arguments are a dtype alone (positional or ``dtype=``)."""
    import mindspore

    if len(args) + len(kwargs) != 1 or not (args or "dtype" in kwargs):
        return False
    return isinstance(args[0] if args else kwargs["dtype"], mindspore.dtype.Type)


def _permuted_order(tensor: Any) -> tuple[int, ...] | None:
    """The order of ``tensor``'s dimensions (outermost first) in which its memory is contiguous, where it is a
    non-contiguous permutation of a contiguous layout with no dimension of size 0 or 1 (PyTorch's conversions then
    keep its strides: ``x.t().to(dtype)``); else None (contiguous, a slice, overlapping, or a size-1 dimension,
    whose stride PyTorch copies as it is)."""
    try:
        shape, strides = tuple(tensor.shape), tuple(tensor.stride())
    except (AttributeError, TypeError, RuntimeError):
        return None
    if len(shape) < 2 or any(size <= 1 for size in shape) or tensor.is_contiguous():
        return None
    order = tuple(sorted(range(len(shape)), key=lambda dim: -strides[dim]))
    expected = 1
    for dim in reversed(order):
        if strides[dim] != expected:
            return None
        expected *= shape[dim]
    return order


#: device names that mean an accelerator (MSAdapter's ``torch.cuda.current_device()`` is ``"Ascend"``)
_ACCELERATORS = frozenset({"cuda", "npu", "ascend"})


@functools.lru_cache(maxsize=64)
def _names_accelerator(name: str) -> bool:
    return name.split(":", 1)[0].lower() in _ACCELERATORS


def _is_accelerator(device: Any) -> bool:
    """Whether ``device`` names an accelerator (a dtype, tensor, ``None`` or an unknown name does not)."""
    if type(device) is str:  # the common case, answered from a small cache (this runs on every tensor move)
        return _names_accelerator(device)
    if isinstance(device, bool) or device is None:
        return False
    if isinstance(device, int):
        return True  # an accelerator ordinal
    kind = device if isinstance(device, str) else (
        device.type if type(device).__name__ == "device" and isinstance(getattr(device, "type", None), str) else None)
    return kind is not None and kind.split(":", 1)[0].lower() in _ACCELERATORS


def identity_cpu_wrapper(cpu: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``Tensor.cpu`` return the tensor itself on the CPU backend (PyTorch: no copy for a CPU tensor)."""

    @functools.wraps(cpu)
    def cpu_self(self: Any, *args: Any, **kwargs: Any) -> Any:
        del args, kwargs  # memory_format / non_blocking: nothing to do for a tensor already on the host
        return self

    return cpu_self


def cat_promotion_wrapper(cat: Callable[..., Any]) -> Callable[..., Any]:
    """Promote ``torch.cat``'s inputs to their common dtype (the highest category, then the widest), as PyTorch."""

    @functools.wraps(cat)
    def cat_promoting(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        tensors = list(tensors)
        if len({t.dtype for t in tensors}) > 1:
            dtype = max(tensors, key=lambda t: (category(t), t.itemsize)).dtype
            tensors = [t if t.dtype == dtype else t.astype(dtype) for t in tensors]
        return cat(tensors, *args, **kwargs)

    return cat_promoting
