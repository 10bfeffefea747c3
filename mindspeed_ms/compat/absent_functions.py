"""torch functions and Tensor methods that MSAdapter 0.5.0b1 lacks or refuses, composed of ops it has.

Measured against torch 2.13 (tests/conformance/cases/fix_absent_functions.py): ``torch.result_type``,
``torch.promote_types``, ``Tensor.new_tensor``, ``torch.diag_embed``, ``torch.cummax`` / ``cummin`` do not exist
(AttributeError); ``F.one_hot(t)`` without ``num_classes`` fails in MindSpore's OneHot ("depth ... got -1");
``torch.tensor_split(x, 3)`` (a number of sections) raises TypeError ("'int' object is not iterable");
``F.conv1d(..., groups=g)`` (Mamba's depthwise convolution) fails in MindSpore's Conv2D ("w_shape[0] must be equal
to out_channel").

Arguments are checked in Python before any kernel runs (a failing kernel can switch MSAdapter's autograd off); the
errors carry PyTorch's builtin class and message. Gradients flow through differentiable ops (``gather``, ``where``,
``narrow``), so they are PyTorch's.
"""

from __future__ import annotations

import collections
import functools
import numbers
import warnings
from typing import Any, Callable

__all__ = ["result_type", "promote_types", "new_tensor", "one_hot_wrapper", "diag_embed", "cummax", "cummin",
           "tensor_split", "tensor_tensor_split", "conv1d_wrapper"]

_CATEGORIES = ("bool", "int", "float", "complex")


@functools.cache
def _kinds() -> dict[Any, tuple[int, int]]:
    """dtype -> (category index, rank within the category) for the dtypes PyTorch promotes by its table."""
    import mindspore

    ints = (mindspore.uint8, mindspore.int8, mindspore.int16, mindspore.int32, mindspore.int64)
    floats = (mindspore.float16, mindspore.bfloat16, mindspore.float32, mindspore.float64)
    kinds = {mindspore.bool_: (0, 0)}
    kinds.update({dtype: (1, rank) for rank, dtype in enumerate(ints)})
    kinds.update({dtype: (2, rank) for rank, dtype in enumerate(floats)})
    kinds.update({mindspore.complex64: (3, 0), mindspore.complex128: (3, 1)})
    return kinds


def _kind(dtype: Any) -> tuple[int, int]:
    try:
        return _kinds()[dtype]
    except KeyError:
        raise TypeError(f"type promotion of {dtype} is not supported here (PyTorch's table covers bool, uint8, "
                        f"int8-int64, float16, bfloat16, float32, float64, complex64, complex128)") from None


def promote_types(type1: Any, type2: Any) -> Any:
    """``torch.promote_types``: the smallest dtype both ``type1`` and ``type2`` convert to, by PyTorch's table."""
    import mindspore

    (cat1, rank1), (cat2, rank2) = _kind(type1), _kind(type2)
    if type1 == type2:
        return type1
    if cat1 != cat2:
        high, low = (type1, type2) if cat1 > cat2 else (type2, type1)
        if high == mindspore.complex64 and low == mindspore.float64:
            return mindspore.complex128
        return high
    if cat1 == 1 and mindspore.uint8 in (type1, type2):  # uint8 with a signed type: the next signed that holds both
        other = type2 if type1 == mindspore.uint8 else type1
        return mindspore.int16 if other == mindspore.int8 else other
    if cat1 == 2 and {type1, type2} == {mindspore.float16, mindspore.bfloat16}:
        return mindspore.float32
    return type1 if rank1 > rank2 else type2


def _is_float(dtype: Any) -> bool:
    return _kind(dtype)[0] == 2


def _is_complex(dtype: Any) -> bool:
    return _kind(dtype)[0] == 3


def _to_complex(dtype: Any) -> Any:
    import mindspore

    return mindspore.complex128 if dtype == mindspore.float64 else mindspore.complex64


def _combine(higher: Any, lower: Any) -> Any:
    """c10's combine_categories: a higher-priority operand's dtype, raised only by a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if _is_complex(higher):
        return higher
    if _is_complex(lower):
        return _to_complex(higher) if _is_float(higher) else lower
    if _is_float(higher):
        return higher
    import mindspore

    if higher == mindspore.bool_ or _is_float(lower):
        return promote_types(higher, lower)
    return higher


def _scalar_dtype(value: Any) -> Any:
    import mindspore
    import msadapter

    if isinstance(value, bool):
        return mindspore.bool_
    if isinstance(value, numbers.Integral):
        return mindspore.int64
    if isinstance(value, numbers.Real):
        return msadapter.get_default_dtype()
    if isinstance(value, numbers.Complex):
        return _to_complex(msadapter.get_default_dtype())
    raise TypeError(f"result_type() received an invalid combination of arguments: {type(value).__name__} is "
                    f"neither a Tensor nor a Number")


def result_type(tensor1: Any, tensor2: Any) -> Any:
    """``torch.result_type``: the dtype of an arithmetic op on the two operands, by PyTorch's rules (tensors with
    dimensions over 0-d tensors over Python numbers, each raised only by a higher category)."""
    import mindspore

    states: dict[str, Any] = {"dim": None, "zero": None, "wrapped": None}
    for operand in (tensor1, tensor2):
        if isinstance(operand, mindspore.Tensor):
            key, dtype = ("zero" if len(operand.shape) == 0 else "dim"), operand.dtype
        else:
            key, dtype = "wrapped", _scalar_dtype(operand)
        states[key] = dtype if states[key] is None else promote_types(states[key], dtype)
    return _combine(states["dim"], _combine(states["zero"], states["wrapped"]))


def new_tensor(self: Any, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               layout: Any = None, pin_memory: bool = False) -> Any:
    """``Tensor.new_tensor``: ``torch.tensor(data)`` of ``self``'s dtype unless ``dtype`` is given (a copy, no
    autograd history, also of a tensor ``data``)."""
    del device, layout, pin_memory  # one device here, strided, no pinned memory on MindSpore
    import mindspore
    import msadapter

    dtype = self.dtype if dtype is None else dtype
    if isinstance(data, mindspore.Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        result = data.detach().clone().to(dtype)
    else:
        result = msadapter.tensor(data, dtype=dtype)
    return result.requires_grad_(True) if requires_grad else result


def one_hot_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``F.one_hot`` with PyTorch's checks and ``num_classes=-1`` (the default: the largest class + 1)."""
    import mindspore

    @functools.wraps(op)
    def one_hot(tensor: Any, num_classes: int = -1) -> Any:
        if not isinstance(tensor, mindspore.Tensor) or tensor.dtype != mindspore.int64:
            raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
        empty = 0 in tuple(tensor.shape)
        if empty and num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        if empty:  # MindSpore's OneHot refuses an empty input
            import msadapter

            return msadapter.zeros(*tensor.shape, max(num_classes, 0), dtype=msadapter.int64)
        if num_classes < -1:
            raise RuntimeError("num_classes should be positive")
        import msadapter

        smallest, largest = (int(v) for v in msadapter.stack((tensor.min(), tensor.max())).tolist())  # one sync
        if smallest < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = largest + 1
        elif largest >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
        return op(tensor, num_classes)

    return one_hot


def _dim(ndim: int, dim: int) -> int:
    low, high = -max(ndim, 1), max(ndim, 1) - 1
    if not low <= dim <= high:
        raise IndexError(f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})")
    return dim % max(ndim, 1)


def diag_embed(input: Any, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
    """``torch.diag_embed``: the last dim of ``input`` on the ``offset`` diagonal of the planes (``dim1``,
    ``dim2``) of the result (one more dim than ``input``); zeros elsewhere (also where ``input`` is inf/nan)."""
    import msadapter

    ndim = len(input.shape) + 1
    first, second = _dim(ndim, dim1), _dim(ndim, dim2)
    if first == second:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    length = int(input.shape[-1]) if input.shape else 1
    size = length + abs(offset)
    values = input.reshape(1) if len(input.shape) == 0 else input
    padding = msadapter.zeros(*values.shape[:-1], abs(offset), dtype=values.dtype)
    values = msadapter.cat((values, padding), -1) if offset else values
    rows = msadapter.arange(size).reshape(size, 1)
    columns = msadapter.arange(size).reshape(1, size)
    if offset >= 0:  # out[r, r + offset] = values[r]
        mask, spread = columns == rows + offset, values.unsqueeze(-1)
    else:  # out[c - offset, c] = values[c]
        mask, spread = rows == columns - offset, values.unsqueeze(-2)
    shape = (*values.shape[:-1], size, size)
    result = msadapter.where(mask.broadcast_to(shape), spread.broadcast_to(shape),
                             msadapter.zeros((), dtype=values.dtype))
    batch = [d for d in range(ndim) if d not in (first, second)]
    order = [0] * ndim
    for position, d in enumerate(batch):
        order[d] = position
    order[first], order[second] = ndim - 2, ndim - 1
    return result.permute(*order)


def _extreme_indices(values: Any, dim: int, greater: bool) -> Any:
    """Int64 indices of the running maximum (``greater``) or minimum along ``dim``, PyTorch's ties and nan:
    the latest equal value, and a nan stays (the latest nan)."""
    import numpy as np

    array = np.moveaxis(np.asarray(values.float().asnumpy() if values.dtype not in _exact_dtypes()
                                   else values.asnumpy()), dim, -1)
    indices = np.zeros(array.shape, dtype=np.int64)
    if array.shape[-1] == 0:
        return np.moveaxis(indices, -1, dim)
    best, where = array[..., 0].copy(), np.zeros(array.shape[:-1], dtype=np.int64)
    for i in range(array.shape[-1]):
        x = array[..., i]
        with np.errstate(invalid="ignore"):
            better = (x >= best) if greater else (x <= best)
        take = np.isnan(x) | (~np.isnan(best) & better) if array.dtype.kind in "fc" else better
        best, where = np.where(take, x, best), np.where(take, i, where)
        indices[..., i] = where
    return np.moveaxis(indices, -1, dim)


@functools.cache
def _exact_dtypes() -> frozenset[Any]:
    import mindspore

    return frozenset((mindspore.float32, mindspore.float64, mindspore.float16, mindspore.bool_, mindspore.uint8,
                      mindspore.int8, mindspore.int16, mindspore.int32, mindspore.int64))


def _running_extreme(name: str, input: Any, dim: int, greater: bool) -> Any:
    import mindspore
    import msadapter

    if not isinstance(input, mindspore.Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    dim = _dim(len(input.shape), dim)
    result = _returns(name)
    if len(input.shape) == 0:
        return result(input.clone(), msadapter.tensor(0, dtype=msadapter.int64))
    indices = msadapter.tensor(_extreme_indices(input, dim, greater))
    if 0 in tuple(input.shape):
        return result(input.clone(), indices)
    return result(msadapter.gather(input, dim, indices), indices)


@functools.cache
def _returns(name: str) -> Any:
    return collections.namedtuple(name, ("values", "indices"))


def cummax(input: Any, dim: int) -> Any:
    """``torch.cummax``: ``(values, indices)`` of the running maximum along ``dim``; indices on the host (int64),
    values gathered from ``input`` so the gradient is PyTorch's scatter of the output's gradient."""
    return _running_extreme("cummax", input, dim, greater=True)


def cummin(input: Any, dim: int) -> Any:
    """``torch.cummin``: as :func:`cummax`, of the running minimum."""
    return _running_extreme("cummin", input, dim, greater=False)


def _split_points(size: int, indices_or_sections: Any) -> list[tuple[int, int]]:
    import mindspore

    if isinstance(indices_or_sections, mindspore.Tensor):
        if indices_or_sections.dtype != mindspore.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have integer dtype, but got "
                               f"{indices_or_sections.dtype}")
        if len(indices_or_sections.shape) > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {len(indices_or_sections.shape)} dims")
        indices_or_sections = (int(indices_or_sections) if len(indices_or_sections.shape) == 0
                               else [int(i) for i in indices_or_sections.tolist()])
    if isinstance(indices_or_sections, numbers.Integral) and not isinstance(indices_or_sections, bool):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        small, extra = divmod(size, sections)
        bounds, start = [], 0
        for piece in range(sections):
            end = start + small + (1 if piece < extra else 0)
            bounds.append((start, end))
            start = end
        return bounds
    points = [int(i) for i in indices_or_sections]
    bounds, start = [], 0
    for point in [*points, size]:
        end = point + size if point < 0 else point
        end = min(max(end, 0), size)
        begin = min(start, size)
        bounds.append((begin, max(end, begin)))
        start = end
    bounds[-1] = (bounds[-1][0], size)
    return bounds


def tensor_split(input: Any, indices_or_sections: Any, dim: int = 0) -> tuple[Any, ...]:
    """``torch.tensor_split``: views of ``input`` along ``dim``, by a number of sections (the first ``size %
    sections`` one longer) or at indices (clamped like slicing: pieces may be empty)."""
    ndim = len(input.shape)
    if ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    dim = _dim(ndim, dim)
    size = int(input.shape[dim])
    return tuple(input.narrow(dim, start, end - start) for start, end in _split_points(size, indices_or_sections))


def tensor_tensor_split(self: Any, indices_or_sections: Any, dim: int = 0, *, axis: int | None = None
                        ) -> tuple[Any, ...]:
    """``Tensor.tensor_split``: see :func:`tensor_split` (``axis``: MindSpore's name of ``dim``, which the method
    it replaces took)."""
    return tensor_split(self, indices_or_sections, dim if axis is None else axis)


def conv1d_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``F.conv1d`` with ``groups > 1`` (Mamba's depthwise convolution) through ``F.conv2d`` on a height of 1:
    MSAdapter's builds its Conv2D with ``out_channel = weight.shape[0] * groups`` and MindSpore refuses the weight."""

    @functools.wraps(op)
    def conv1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
               groups: int = 1) -> Any:
        if groups == 1:
            return op(input, weight, bias, stride, padding, dilation, groups)
        import msadapter.nn.functional as F

        def single(value: Any) -> Any:
            return value[0] if isinstance(value, (tuple, list)) else value

        stride, padding, dilation = single(stride), single(padding), single(dilation)
        batched = len(input.shape) == 3
        planes = input if batched else input.unsqueeze(0)
        if padding == "same":  # PyTorch's: the odd extra column on the right
            if stride != 1:
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = dilation * (int(weight.shape[-1]) - 1)
            planes, padding = F.pad(planes, (total // 2, total - total // 2)), 0
        elif padding == "valid":
            padding = 0
        output = F.conv2d(planes.unsqueeze(2), weight.unsqueeze(2), bias, (1, stride), (0, padding), (1, dilation),
                          groups).squeeze(2)
        return output if batched else output.squeeze(0)

    return conv1d
