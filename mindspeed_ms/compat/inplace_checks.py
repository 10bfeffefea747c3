"""PyTorch's refusals of in-place writes, checked in Python before any kernel runs.

PyTorch refuses an in-place op when its result type cannot be cast to ``self``'s dtype
(``torch.tensor([1, 2]).div_(2)``: "result type Float can't be cast to the desired output type Long"),
when elements of ``self`` share memory (``t.expand(4, 3).add_(1)``), when ``self`` and an input overlap
partly (``a[1:].copy_(a[:-1])``), and when ``self`` is a leaf that requires grad while grad mode is on.
MindSpore's CPU backend checks none of these: it truncates, writes each element in turn, or rebases the
leaf. :func:`check_inplace` reproduces PyTorch's checks (``at::canCast``, ``assert_no_internal_overlap``,
``assert_no_partial_overlap``, the leaf check of ``check_inplace``) so the replacements raise exactly
where PyTorch does. It runs before any kernel: a failing kernel can switch autograd off for the rest of
the process.
"""

from __future__ import annotations

import sys
from typing import Any

from mindspeed_ms.compat.errors import InPlaceWriteError

__all__ = ["InPlaceWriteError", "check_inplace", "check_no_internal_overlap", "check_no_partial_overlap",
           "check_leaf", "check_broadcast", "records_grad", "category", "BOOL", "INTEGRAL", "FLOATING", "COMPLEX"]

#: dtype categories, ordered as PyTorch promotes them (a result may be cast down a category, never up)
BOOL, INTEGRAL, FLOATING, COMPLEX = 0, 1, 2, 3

_PYTORCH_NAMES = {"Bool": "Bool", "Int8": "Char", "Int16": "Short", "Int32": "Int", "Int64": "Long",
                  "UInt8": "Byte", "Float16": "Half", "BFloat16": "BFloat16", "Float32": "Float",
                  "Float64": "Double", "Complex64": "ComplexFloat", "Complex128": "ComplexDouble"}
_DEFAULT_OF_CATEGORY = {BOOL: "Bool", INTEGRAL: "Long", FLOATING: "Float", COMPLEX: "ComplexFloat"}


#: MindSpore dtype -> its name (``str`` of one costs microseconds; there are a dozen of them)
#: id of a MindSpore dtype -> (the dtype, its name): by id, as a MindSpore dtype hashes through pybind11 (~10
#: times an int's hash); the entry keeps the dtype alive, and a lookup checks it is the same object
_KEYS: dict[int, tuple[Any, str]] = {}


def _dtype_key(dtype: Any) -> str:
    entry = _KEYS.get(id(dtype))
    if entry is not None and entry[0] is dtype:
        return entry[1]
    key = str(dtype).rsplit(".", 1)[-1]
    if type(dtype).__module__ == _MINDSPORE_TYPES and len(_KEYS) < 64:
        _KEYS[id(dtype)] = (dtype, key)
    return key


_MINDSPORE_TYPES = "mindspore._c_expression.typing"


#: the category of a Python scalar of exactly these types (one dict lookup; subclasses take isinstance's chain)
_SCALARS = {bool: BOOL, int: INTEGRAL, float: FLOATING, complex: COMPLEX}
#: id of a MindSpore dtype -> (the dtype, its category), kept as :data:`_KEYS` keeps names (identity checked)
_CATEGORIES: dict[int, tuple[Any, int]] = {}


def category(value: Any) -> int:
    """Return PyTorch's promotion category of a tensor's dtype or of a Python scalar."""
    kind_of = type(value)
    if kind_of in _SCALARS:  # ``in`` and subscription: no dict method call
        return _SCALARS[kind_of]
    if isinstance(value, (bool, int, float, complex)):  # a subclass (NumPy's float64 is a float)
        if isinstance(value, bool):
            return BOOL
        if isinstance(value, int):
            return INTEGRAL
        if isinstance(value, float):
            return FLOATING
        return COMPLEX
    dtype = getattr(value, "dtype", value)
    entry = _CATEGORIES.get(id(dtype))
    if entry is not None and entry[0] is dtype:
        return entry[1]
    key = _dtype_key(dtype)
    if key == "Bool":
        kind = BOOL
    elif key.startswith(("Int", "UInt")):
        kind = INTEGRAL
    elif key.startswith("Complex"):
        kind = COMPLEX
    else:
        kind = FLOATING
    if type(dtype).__module__ == _MINDSPORE_TYPES and len(_CATEGORIES) < 64:
        _CATEGORIES[id(dtype)] = (dtype, kind)
    return kind


def pytorch_dtype_name(dtype: Any) -> str:
    """Return PyTorch's name of ``dtype`` (``"Float"``, ``"Long"``, ...), as its error messages spell it."""
    key = _dtype_key(dtype)
    return _PYTORCH_NAMES.get(key, key)


def _result_name(operands: tuple[Any, ...], result_category: int) -> str:
    # PyTorch names the promoted dtype: a dimensioned tensor of the winning category fixes it, else a
    # 0-d tensor, else the category's default (Long, the default float dtype Float, ComplexFloat).
    tensors = [o for o in operands if hasattr(o, "dtype") and category(o) == result_category]
    for tensor in sorted(tensors, key=lambda t: len(getattr(t, "shape", ())) == 0):
        return pytorch_dtype_name(tensor.dtype)
    return _DEFAULT_OF_CATEGORY[result_category]


def records_grad(tensor: Any) -> bool:
    """Return whether autograd records ops on ``tensor`` (it requires grad and grad mode is on)."""
    if not getattr(tensor, "requires_grad", False):
        return False
    msadapter = sys.modules.get("msadapter")
    return bool(msadapter.is_grad_enabled()) if msadapter is not None else True


def check_leaf(op: str, tensor: Any) -> None:
    """Raise as PyTorch does for an in-place write into a leaf that requires grad (grad mode on)."""
    if getattr(tensor, "is_leaf", False) and records_grad(tensor):
        raise InPlaceWriteError(op, "leaf", "a leaf Variable that requires grad is being used in an in-place "
                                            "operation.")


def _is_non_overlapping_and_dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    # at::TensorImpl::compute_non_overlapping_and_dense: the strides, sorted, form a contiguous layout.
    dims = sorted((i for i in range(len(shape)) if shape[i] != 1), key=lambda i: (strides[i], shape[i]))
    expected = 1
    for i in dims:
        if strides[i] != expected:
            return False
        expected *= shape[i]
    return True


def _layout(tensor: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple(int(n) for n in tensor.shape), tuple(int(s) for s in tensor.stride())


def check_no_internal_overlap(op: str, tensor: Any) -> None:
    """Raise as PyTorch does when elements of ``tensor`` share memory (``expand``: a stride 0)."""
    if tensor.is_contiguous():  # the common case, ~100 calls a step: contiguous strides never repeat
        return
    shape, strides = _layout(tensor)
    if any(size > 1 and stride == 0 for size, stride in zip(shape, strides)):
        raise InPlaceWriteError(op, "internal_overlap", "unsupported operation: more than one element of the "
                                "written-to tensor refers to a single memory location. Please clone() the "
                                "tensor before performing the operation.")


def check_no_partial_overlap(op: str, tensor: Any, other: Any) -> None:
    """Raise as PyTorch does when ``other``'s memory overlaps ``tensor``'s without being the same layout.

    PyTorch's ``get_overlap_status``: two non-overlapping, dense tensors whose byte ranges intersect
    overlap partly unless they start and end at the same address with the same strides. Tensors that are
    not dense are "too hard" and pass, as in PyTorch.
    """
    if other is tensor or not (hasattr(tensor, "data_ptr") and hasattr(tensor, "stride") and hasattr(other, "data_ptr")
                               and hasattr(other, "stride")):
        return
    if tensor.is_contiguous() and other.is_contiguous():
        # The common case, ~100 calls a step: both dense, so disjoint byte ranges settle it at once.
        size, other_size = int(tensor.nbytes), int(other.nbytes)
        if size == 0 or other_size == 0:
            return
        begin, other_begin = int(tensor.data_ptr()), int(other.data_ptr())
        if not (begin < other_begin + other_size and other_begin < begin + size):
            return
    if int(tensor.numel()) == 0 or int(other.numel()) == 0:
        return
    shape, strides = _layout(tensor)
    other_shape, other_strides = _layout(other)
    if not (_is_non_overlapping_and_dense(shape, strides)
            and _is_non_overlapping_and_dense(other_shape, other_strides)):
        return
    begin = int(tensor.data_ptr())
    end = begin + int(tensor.numel()) * int(tensor.itemsize)
    other_begin = int(other.data_ptr())
    other_end = other_begin + int(other.numel()) * int(other.itemsize)
    if begin == other_begin and end == other_end:
        if strides == other_strides:
            return
    elif not (begin < other_end and other_begin < end):
        return
    raise InPlaceWriteError(op, "partial_overlap", "unsupported operation: some elements of the input tensor "
                            "and the written-to tensor refer to a single memory location. Please clone() the "
                            "tensor before performing the operation.")


def _dims(value: Any) -> tuple[int, ...]:
    """``value.shape`` as a tuple of ints: MindSpore's own ``_shape`` where there is one (MSAdapter's ``shape``
    builds a torch.Size of it on every read)."""
    raw = getattr(value, "_shape", None)
    return tuple(raw) if raw is not None else tuple(int(n) for n in value.shape)


def check_broadcast(op: str, tensor: Any, operands: tuple[Any, ...]) -> None:
    """Raise as PyTorch does when the operands broadcast to a shape other than ``tensor``'s."""
    shape = _dims(tensor)
    shapes = []
    for operand in operands:  # loops, not comprehensions: frames fewer on every in-place op
        if hasattr(operand, "shape") and hasattr(operand, "dtype"):
            shapes.append(_dims(operand))
    if shapes.count(shape) == len(shapes):  # every one equal to it
        return
    import numpy as np

    try:
        broadcast = tuple(np.broadcast_shapes(shape, *shapes))
    except ValueError:
        broadcast = None
    if broadcast != shape:
        raise InPlaceWriteError(op, "shape", f"output with shape {list(shape)} doesn't match the broadcast shape "
                                             f"{list(broadcast) if broadcast is not None else shapes}")


def check_inplace(op: str, tensor: Any, *operands: Any, result_category: int | None = None) -> None:
    """Raise where PyTorch refuses ``tensor.op(*operands)``; return quietly where it accepts it.

    Args:
        op: the in-place method, for the message.
        tensor: ``self``, the tensor written.
        operands: the op's other inputs (tensors or Python scalars); their dtypes promote with ``self``'s.
        result_category: at least this category for the result (``FLOATING`` for true division and
            ``exp_``); None: the promotion of ``self`` and ``operands`` alone.

    Raises:
        InPlaceWriteError: the result cannot be cast to ``self``'s dtype, ``self`` overlaps itself or
            an operand partly, or ``self`` is a leaf that requires grad with grad mode on.
    """
    check_leaf(op, tensor)
    check_no_internal_overlap(op, tensor)
    for operand in operands:
        check_no_partial_overlap(op, tensor, operand)
    check_broadcast(op, tensor, operands)
    own = category(tensor)
    # A 0-d tensor or a scalar of the same or lower category does not change the dtype; of a higher
    # category it does: both change the category, and the category is all canCast looks at.
    promoted = own
    for operand in operands:
        if operand is not None:
            promoted = max(promoted, category(operand))
    if result_category is not None:
        promoted = max(promoted, result_category)
    if promoted > own:
        raise InPlaceWriteError(op, "cast", f"result type {_result_name(operands, promoted)} can't be cast to "
                                            f"the desired output type {pytorch_dtype_name(tensor.dtype)}")
