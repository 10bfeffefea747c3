"""PyTorch's index_copy / index_put / scatter / scatter_add / addcmul and random in-place fills on MindSpore's CPU.

MindSpore's CPU backend has no InplaceIndexCopy, InplaceIndexPut, InplaceScatterValue, ScatterAddExt,
InplaceScatterAdd, InplaceUniform, BitwiseNot or AddcmulExt kernel (``RuntimeError: The kernel ... unregistered``),
``Tensor.index_copy`` does not exist and ``Tensor.index_put`` accepts only 1-d values. Each replacement validates its
arguments first as PyTorch does (index dtype and range, shapes), so an error leaves ``self`` untouched, computes
the result out of place with kernels that exist on CPU (``tensor_scatter_elements``, ``tensor_scatter_update``,
``tensor_scatter_add``, ``invert``, ``logical_not``, arithmetic) and, for the in-place forms, writes it into
``self`` through views (:func:`~mindspeed_ms.compat.inplace.write_back`), so a view's base sees the write.

Random fills (``uniform_``, ``exponential_``) draw from MSAdapter's ``torch.rand``, which follows
``torch.manual_seed``; the values cannot equal PyTorch's generator's, only their distribution and range.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.compat.errors import IndexArgumentError, IndexOutOfRangeError
from mindspeed_ms.compat.inplace import write_back
from mindspeed_ms.compat.inplace_checks import BOOL, FLOATING, InPlaceWriteError, category, check_inplace
from mindspeed_ms.compat.random_generator import drawing_from

__all__ = ["IndexArgumentError", "IndexOutOfRangeError", "index_copy", "index_copy_", "index_put", "index_put_",
           "scatter_", "scatter_add", "scatter_add_", "uniform_", "exponential_", "bitwise_not_", "addcmul", "addcdiv"]


def _is_int64(tensor: Any) -> bool:
    return "Int64" in str(tensor.dtype)


def _ndim(tensor: Any) -> int:
    return len(tensor.shape)


def _wrap_dim(op: str, dim: int, ndim: int) -> int:
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise InPlaceWriteError(op, "argument", f"Dimension out of range (expected to be in range of "
                                                f"[{-rank}, {rank - 1}], but got {dim})")
    return dim % rank


def _check_range(op: str, index: Any, dim: int, size: int, allow_negative: bool) -> None:
    if not index.numel():
        return
    low, high = int(index.min()), int(index.max())
    bad = low if low < (-size if allow_negative else 0) else (high if high >= size else None)
    if bad is not None:
        raise IndexOutOfRangeError(op, bad, dim, size)


def _along(index: Any, dim: int, shape: tuple[int, ...]) -> Any:
    """Return the 1-d ``index`` broadcast to ``shape`` along ``dim`` (scatter_elements' index for index_copy)."""
    view = [1] * len(shape)
    view[dim] = int(index.shape[0]) if _ndim(index) else 1
    return index.reshape(view).broadcast_to(shape)


def index_copy(self: Any, dim: int, index: Any, source: Any) -> Any:
    """Return ``self`` with the slices at ``index`` along ``dim`` replaced by ``source`` (``Tensor.index_copy``)."""
    from mindspore import ops

    op = "index_copy_"
    dim = _wrap_dim(op, dim, _ndim(self))
    if not _is_int64(index):
        raise InPlaceWriteError(op, "argument", f"{op}(): Expected a long tensor for index, but got {index.dtype}")
    if _ndim(index) > 1:
        raise InPlaceWriteError(op, "argument", f"{op}(): Index should have dimension 1 or 0 (got {_ndim(index)})")
    if source.dtype != self.dtype:
        raise InPlaceWriteError(op, "argument", f"{op}(): self and source expected to have the same dtype, but got "
                                                f"(self) {self.dtype} and (source) {source.dtype}")
    count = int(index.numel())
    expected = list(self.shape)
    if _ndim(self):
        expected[dim] = count
    if list(source.shape) != expected and not (_ndim(source) == 0 and count == 1):
        raise InPlaceWriteError(op, "shape", f"{op}(): Source/destination tensor must have same slice shapes. "
                                             f"Destination slice shape: {tuple(self.shape)} at dimension {dim} and "
                                             f"source slice shape: {tuple(source.shape)} at dimension {dim}.")
    size = int(self.shape[dim]) if _ndim(self) else 1
    _check_range(op, index, dim, size, allow_negative=False)
    if _ndim(self) == 0:
        return source.reshape(()).copy() if count else self.copy()
    return ops.tensor_scatter_elements(self, _along(index.reshape(-1), dim, tuple(source.shape)), source, dim)


def index_copy_(self: Any, dim: int, index: Any, source: Any) -> Any:
    """Copy ``source`` into ``self`` at ``index`` along ``dim``, in place (``Tensor.index_copy_``)."""
    check_inplace("index_copy_", self)
    return write_back("index_copy_", self, index_copy(self, dim, index, source))


def _linear_indices(op: str, self: Any, indices: Any) -> Any:
    """Return the advanced ``indices`` as one ``[..., k]`` int64 tensor of non-negative coordinates."""
    import mindspore
    import numpy as np
    from mindspore import ops

    if not isinstance(indices, (tuple, list)):
        raise InPlaceWriteError(op, "argument", f"{op}(): indices must be a tuple of tensors, got {type(indices)}")
    coords: list[Any] = []
    for index in indices:
        if index is None:
            raise InPlaceWriteError(op, "unsupported", f"{op}(): a None entry in indices is not supported on this "
                                                       f"backend; index with x[..., idx] = v instead")
        if category(index) == BOOL or "UInt8" in str(index.dtype):  # uint8 indices are masks to PyTorch
            start = len(coords)
            mask_shape = tuple(self.shape[start:start + _ndim(index)])
            if tuple(index.shape) != mask_shape:
                raise IndexArgumentError(op, f"The shape of the mask {list(index.shape)} at index {start} does not "
                                             f"match the shape of the indexed tensor {list(self.shape)} at index "
                                             f"{start}")
            coords.extend(ops.nonzero(index.astype(mindspore.bool_)).astype(mindspore.int64).unbind(1))
            continue
        if "Int64" not in str(index.dtype) and "Int32" not in str(index.dtype):
            raise IndexArgumentError(op, "tensors used as indices must be long, int, byte or bool tensors")
        dim = len(coords)
        if dim >= _ndim(self):
            raise IndexArgumentError(op, f"too many indices for tensor of dimension {_ndim(self)} (got {len(indices)})")
        size = int(self.shape[dim])
        index = index.astype(mindspore.int64)
        _check_range(op, index, dim, size, allow_negative=True)
        coords.append(ops.where(index < 0, index + size, index))
    if len(coords) > _ndim(self):
        raise IndexArgumentError(op, f"too many indices for tensor of dimension {_ndim(self)} (got {len(coords)})")
    try:
        shape = tuple(int(n) for n in np.broadcast_shapes(*(tuple(c.shape) for c in coords)))
    except ValueError as error:
        raise IndexArgumentError(op, f"shape mismatch: indexing tensors could not be broadcast together with "
                                     f"shapes {[tuple(c.shape) for c in coords]}") from error
    return ops.stack([c.broadcast_to(shape) for c in coords], -1)


def index_put(self: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:
    """Return ``self`` with ``values`` put (or, with ``accumulate``, added) at ``indices`` (``Tensor.index_put``)."""
    from mindspore import ops

    op = "index_put_"
    if values.dtype != self.dtype:
        raise InPlaceWriteError(op, "argument", f"Index put requires the source and destination dtypes match, got "
                                                f"{self.dtype} for the destination and {values.dtype} for the source.")
    if not indices:
        return (self + values if accumulate else values.broadcast_to(self.shape)).astype(self.dtype)
    coords = _linear_indices(op, self, indices)
    target = tuple(coords.shape[:-1]) + tuple(self.shape[int(coords.shape[-1]):])
    try:
        updates = values.broadcast_to(target)
    except (ValueError, RuntimeError) as error:
        raise InPlaceWriteError(op, "shape", f"shape mismatch: value tensor of shape {tuple(values.shape)} cannot "
                                             f"be broadcast to indexing result of shape {target}") from error
    if accumulate:
        return ops.tensor_scatter_add(self, coords, updates)
    return ops.tensor_scatter_update(self, coords, updates)


def index_put_(self: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:
    """Put ``values`` into ``self`` at ``indices`` in place (``Tensor.index_put_``)."""
    check_inplace("index_put_", self)
    return write_back("index_put_", self, index_put(self, indices, values, accumulate))


def _scatter_args(op: str, self: Any, dim: int, index: Any, src: Any) -> tuple[int, Any]:
    """Validate ``scatter``'s arguments as PyTorch does; return the wrapped dim and ``src`` cut to ``index``."""
    dim = _wrap_dim(op, dim, _ndim(self))
    if not _is_int64(index) and "Int32" not in str(index.dtype):
        raise InPlaceWriteError(op, "argument", "scatter(): Expected dtype int32/int64 for index")
    if _ndim(index) != _ndim(self) or _ndim(index) != _ndim(src):
        raise InPlaceWriteError(op, "shape", "Index tensor must have the same number of dimensions as self and "
                                             "src tensors")
    for axis, count in enumerate(index.shape):
        if count > src.shape[axis] or (axis != dim and count > self.shape[axis]):
            raise InPlaceWriteError(op, "shape", f"Expected index {tuple(index.shape)} to be smaller than self "
                                                 f"{tuple(self.shape)} apart from dimension {dim} and to be smaller "
                                                 f"size than src {tuple(src.shape)}")
    try:
        _check_range(op, index, dim, int(self.shape[dim]) if _ndim(self) else 1, allow_negative=False)
    except IndexOutOfRangeError as error:  # PyTorch's scatter kernels raise RuntimeError here, not IndexError
        raise InPlaceWriteError(op, "argument", str(error).replace(f"{op}(): ", "")) from error
    if tuple(src.shape) != tuple(index.shape):
        src = src[tuple(slice(0, int(n)) for n in index.shape)]
    return dim, src


def _scatter_source(self: Any, index: Any, src: Any, value: Any) -> Any:
    from mindspore import ops

    if src is not None and hasattr(src, "shape"):
        if src.dtype != self.dtype:
            raise InPlaceWriteError("scatter_", "argument", "scatter(): Expected self.dtype to be equal to "
                                                            "src.dtype")
        return src
    scalar = src if value is None else value
    if hasattr(scalar, "item"):
        scalar = scalar.item()
    return ops.fill(self.dtype, tuple(index.shape), scalar)


def scatter_(self: Any, dim: int, index: Any, src: Any = None, *, value: Any = None, reduce: Any = None) -> Any:
    """Write ``src`` (a tensor or scalar) into ``self`` at ``index`` along ``dim`` in place (``Tensor.scatter_``)."""
    from mindspore import ops

    if reduce is not None:
        raise InPlaceWriteError("scatter_", "unsupported", "scatter_(reduce=...) is not supported on this backend; "
                                                           "use scatter_add_ or scatter_reduce_")
    source = _scatter_source(self, index, src, value)
    dim, source = _scatter_args("scatter_", self, dim, index, source)
    check_inplace("scatter_", self)
    if not index.numel():
        return self
    return write_back("scatter_", self, ops.tensor_scatter_elements(self, index, source, dim))


def scatter_add(self: Any, dim: int, index: Any, src: Any) -> Any:
    """Return ``self`` with ``src`` added at ``index`` along ``dim`` (``Tensor.scatter_add``); differentiable."""
    from mindspore import ops

    if src.dtype != self.dtype:
        raise InPlaceWriteError("scatter_add", "argument", "scatter(): Expected self.dtype to be equal to src.dtype")
    dim, source = _scatter_args("scatter_add", self, dim, index, src)
    if not index.numel():
        return self.copy()
    return ops.tensor_scatter_elements(self, index, source, dim, reduction="add")


def scatter_add_(self: Any, dim: int, index: Any, src: Any) -> Any:
    """Add ``src`` into ``self`` at ``index`` along ``dim`` in place (``Tensor.scatter_add_``)."""
    check_inplace("scatter_add_", self)
    return write_back("scatter_add_", self, scatter_add(self, dim, index, src))


def _random_unit(op: str, self: Any) -> Any:
    """Return uniform [0, 1) samples shaped like ``self`` in float32 (or float64), from torch.manual_seed's stream."""
    import mindspore
    import torch  # MSAdapter's: its rand follows torch.manual_seed

    if category(self) != FLOATING:
        raise InPlaceWriteError(op, "argument", f'"{op}" not implemented for {self.dtype} (floating point only)')
    dtype = torch.float64 if self.dtype == mindspore.float64 else torch.float32
    return torch.rand(tuple(self.shape), dtype=dtype)


def uniform_(self: Any, from_: float = 0.0, to: float = 1.0, *, generator: Any = None, **kwargs: Any) -> Any:
    """Fill ``self`` with samples from U[from, to) in place (``Tensor.uniform_``; InplaceUniform has no CPU kernel)."""
    low, high = kwargs.pop("from", from_), to
    if kwargs:
        raise InPlaceWriteError("uniform_", "unsupported", f"uniform_(): unsupported arguments {sorted(kwargs)}")
    if low > high:
        raise InPlaceWriteError("uniform_", "argument", f"uniform_ expects to return a [from, to) range, but found "
                                                        f"from={low} > to={high}")
    check_inplace("uniform_", self)
    with drawing_from("Tensor.uniform_", generator):
        unit = _random_unit("uniform_", self)
    return write_back("uniform_", self, unit * (high - low) + low)


def exponential_(self: Any, lambd: float = 1.0, *, generator: Any = None) -> Any:
    """Fill ``self`` with Exp(lambd) samples in place (``Tensor.exponential_``; not implemented on CPU)."""
    from mindspore import ops

    if not lambd > 0:
        raise InPlaceWriteError("exponential_", "argument", f"exponential_ expects lambda > 0.0, but found "
                                                            f"lambda={lambd}")
    check_inplace("exponential_", self)
    with drawing_from("Tensor.exponential_", generator):
        unit = _random_unit("exponential_", self)
    return write_back("exponential_", self, -ops.log1p(-unit) / lambd)


def bitwise_not_(self: Any) -> Any:
    """Invert ``self``'s bits (logical not for bool) in place (``Tensor.bitwise_not_``; no CPU BitwiseNot)."""
    from mindspore import ops

    kind = category(self)
    if kind == FLOATING or "Complex" in str(self.dtype):
        raise InPlaceWriteError("bitwise_not_", "argument", f'"bitwise_not_cpu" not implemented for '
                                                            f"'{self.dtype}'")
    check_inplace("bitwise_not_", self)
    return write_back("bitwise_not_", self, ops.logical_not(self) if kind == BOOL else ops.invert(self))


def erfinv_(self: Any) -> Any:
    """Replace ``self`` by its inverse error function in place (``Tensor.erfinv_``; InplaceErfinv has no CPU kernel;
    ``torch.nn.init.trunc_normal_`` calls it)."""
    from mindspore import ops

    if category(self) != FLOATING:
        raise InPlaceWriteError("erfinv_", "argument", f"erfinv_(): result type Float can't be cast to the desired "
                                                       f"output type {self.dtype}")
    check_inplace("erfinv_", self)
    return write_back("erfinv_", self, ops.erfinv(self))


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: Any = None) -> Any:  # noqa: A002
    """Return ``input + value * tensor1 * tensor2`` (``torch.addcmul``; AddcmulExt has no CPU kernel)."""
    if out is not None:
        raise InPlaceWriteError("addcmul", "unsupported", "torch.addcmul(out=...) is not supported on this "
                                                          "backend; assign the result instead")
    import mindspore
    from mindspore import ops

    if category(input) == FLOATING and input.dtype == tensor1.dtype == tensor2.dtype:
        # MindSpore's Addcmul has a CPU kernel and its own backward (input + t1 * t2 through Add's backward
        # hands the incoming gradient to the leaf, which needs the missing Clone kernel).
        return ops.addcmul(input, tensor1, tensor2, mindspore.tensor(value, dtype=input.dtype))
    product = tensor1 * tensor2
    return input + (product if value == 1 else product * value)


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: Any = None) -> Any:  # noqa: A002
    """Return ``input + value * tensor1 / tensor2`` (``torch.addcdiv``, Adam's step; AddcdivExt has no CPU kernel)."""
    import mindspore
    from mindspore import ops

    if out is not None:
        raise InPlaceWriteError("addcdiv", "unsupported", "torch.addcdiv(out=...) is not supported on this "
                                                          "backend; assign the result instead")
    if category(tensor1) != FLOATING and category(tensor2) != FLOATING:
        raise InPlaceWriteError("addcdiv", "argument", "Integer division with addcdiv is no longer supported, and "
                                                       "in a future release addcdiv will perform a true division "
                                                       "of tensor1 and tensor2. The historic addcdiv behavior can "
                                                       "be implemented as (input + value * torch.trunc(tensor1 / "
                                                       "tensor2)).to(input.dtype) for integer inputs and as (input "
                                                       "+ value * tensor1 / tensor2) for float inputs. The future "
                                                       "addcdiv behavior is just the latter implementation: (input "
                                                       "+ value * tensor1 / tensor2), for all dtypes.")
    if category(input) == FLOATING and input.dtype == tensor1.dtype == tensor2.dtype:
        return ops.addcdiv(input, tensor1, tensor2, mindspore.tensor(value, dtype=input.dtype))
    quotient = tensor1 / tensor2
    return input + (quotient if value == 1 else quotient * value)
