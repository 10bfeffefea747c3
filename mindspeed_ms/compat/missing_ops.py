"""torch functions and Tensor methods that MSAdapter lacks or gets wrong on MindSpore's CPU backend, composed of
ops that have CPU kernels (tests/conformance/cases/ops_shape.py, ops_index.py, ops_misc.py, ops_create.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13: ``x.flip(0)`` (an int for ``dims``)
fails in ReverseV2 (and the failure switched autograd off); ``repeat_interleave`` reads its arguments with
``args.get`` (AttributeError on every call); ``roll`` has no CPU kernel; ``Tensor.type('torch.HalfTensor')``
raises KeyError; ``torch.diag`` of a vector ignores ``diagonal`` and of a matrix returns a 4-d tensor.
Arguments are checked in Python before any kernel runs.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["flip_wrapper", "select_wrapper", "repeat_interleave", "tensor_repeat_interleave", "tensor_roll", "diag",
           "type_wrapper", "dequantize", "from_numpy", "rebuild_shared_tensor", "tensor_new", "like_dtype_wrapper",
           "resize_", "TypedStorage", "storage_wrapper"]


def flip_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``flip`` with ``dims`` given as one int (``x.flip(0)``, as PyTorch accepts) or as varargs."""

    @functools.wraps(op)
    def flip(input: Any, *dims: Any, **kwargs: Any) -> Any:
        if "dims" in kwargs:
            dims = (kwargs.pop("dims"),)
        if len(dims) == 1:
            dims = dims[0]
        if isinstance(dims, int):
            dims = (dims,)
        return op(input, tuple(dims), **kwargs)

    return flip


def select_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.select(dim, index)`` of a tensor that requires grad, grad mode on: as ``self[:, ..., index]`` (the
    same view). MindSpore's own (SelectExtView) fails at ``backward()`` on CPU (InplaceCopy "an unexpected kernel has
    been launched" for a 3-d float32 input; Zeros has no bfloat16 kernel); ``torch.select`` indexes already.
    Other calls go to ``op``."""
    import msadapter

    @functools.wraps(op)
    def select(self: Any, dim: Any, index: Any) -> Any:
        ndim = len(getattr(self, "_shape", ()))
        if (not getattr(self, "requires_grad", False) or not msadapter.is_grad_enabled() or type(dim) is not int
                or type(index) is not int or not -ndim <= dim < ndim):
            return op(self, dim, index)
        return self[(slice(None),) * (dim % ndim) + (index,)]

    return select


def _dim(ndim: int, dim: int) -> int:
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, {max(ndim, 1) - 1}], "
                         f"but got {dim})")
    return dim % max(ndim, 1)


def repeat_interleave(*args: Any, **kwargs: Any) -> Any:
    """``torch.repeat_interleave``: each element (slice along ``dim``) repeated ``repeats`` times.

    An int ``repeats`` broadcasts a new axis and folds it (no copy kernel per element), contiguous like PyTorch's
    result; a tensor of counts gathers
    ``arange(n)`` repeated by the counts (computed on the host with NumPy, as PyTorch syncs to size its output).
    ``repeat_interleave(counts)`` alone gives those indices. MSAdapter's reads its arguments with ``args.get``.
    """
    import numpy as np
    from mindspore import Tensor, ops

    names = ("input", "repeats", "dim")
    values = dict(zip(names, args), **kwargs)
    unknown = set(values) - {*names, "output_size"}
    if len(args) > 3 or unknown or "input" not in values:
        raise TypeError(f"repeat_interleave() received an invalid combination of arguments: {len(args)} positional, "
                        f"keywords {sorted(kwargs)}")
    input, repeats, dim = values["input"], values.get("repeats"), values.get("dim")
    output_size = values.get("output_size")
    if repeats is None:  # repeat_interleave(repeats): the indices
        counts = input
        return repeat_interleave(ops.arange(int(counts.shape[0])), counts, 0, output_size=output_size)
    if dim is None:
        input, dim = input.reshape(-1), 0
    ndim = len(input.shape)
    dim = _dim(ndim, dim)
    if ndim == 0:
        input, ndim = input.reshape(1), 1
    size = int(input.shape[dim])
    if isinstance(repeats, Tensor) and len(repeats.shape) == 0:
        repeats = int(repeats)
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        shape = tuple(input.shape)
        widened = ops.broadcast_to(ops.expand_dims(input, dim + 1), shape[:dim + 1] + (repeats,) + shape[dim + 1:])
        result = widened.reshape(shape[:dim] + (size * repeats,) + shape[dim + 1:])
        # a new tensor, as PyTorch's: the fold of a size-1 dim keeps the broadcast's 0 stride (a view), and
        # megatron's GQA with one query group per rank views the repeated keys ([sk, b, np, hn] -> [sk, b*np, hn])
        return result if result.is_contiguous() else result.contiguous()
    counts = repeats.asnumpy() if isinstance(repeats, Tensor) else np.asarray(repeats)
    if counts.ndim != 1 or counts.shape[0] != size:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{counts.shape[0] if counts.ndim else 0} and input.size({dim}) = {size}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    indices = np.repeat(np.arange(size, dtype=np.int64), counts.astype(np.int64))
    if output_size is not None and int(output_size) != indices.shape[0]:
        raise RuntimeError(f"repeat_interleave: output_size {output_size} does not match the repeats' sum "
                           f"{indices.shape[0]}")
    return ops.gather(input, Tensor(indices), dim)


def tensor_repeat_interleave(self: Any, *args: Any, **kwargs: Any) -> Any:
    """``Tensor.repeat_interleave``: :func:`repeat_interleave` of ``self``."""
    return repeat_interleave(self, *args, **kwargs)


def tensor_roll(self: Any, shifts: Any, dims: Any = None) -> Any:
    """``Tensor.roll`` (MindSpore's Roll has no CPU kernel): concatenation of the two slices per dim."""
    from mindspore import ops

    if dims is None:
        return tensor_roll(self.reshape(-1), shifts, 0).reshape(tuple(self.shape))
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    result = self
    for shift, dim in zip(shifts, dims):
        dim = _dim(len(self.shape), dim)
        size = int(self.shape[dim])
        if size == 0 or shift % size == 0:
            continue
        cut = size - shift % size
        result = ops.cat((result.narrow(dim, cut, size - cut), result.narrow(dim, 0, cut)), dim)
    return result if result is not self else self.copy()


def diag(input: Any, diagonal: int = 0, *, out: Any = None) -> Any:
    """``torch.diag``: the matrix with a vector on its ``diagonal``-th diagonal, or a copy of a matrix's
    ``diagonal``-th diagonal (MSAdapter ignores ``diagonal`` and gives a 4-d tensor for a matrix)."""
    from mindspore import ops

    ndim = len(input.shape)
    if ndim == 1:
        square = ops.diag(input)
        k = abs(diagonal)
        if k:
            padding = (k, 0, 0, k) if diagonal > 0 else (0, k, k, 0)
            square = ops.pad(square, padding)
        result = square
    elif ndim == 2:
        result = ops.diagonal(input, diagonal, 0, 1).copy()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {ndim}D")
    if out is not None:
        out.copy_(result)
        return out
    return result


#: PyTorch's legacy tensor-type names -> dtype names (``x.type('torch.HalfTensor')``, also ``torch.cuda.*``)
_TYPE_NAMES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
               "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16",
               "CharTensor": "int8", "ByteTensor": "uint8", "BoolTensor": "bool_"}
_KIND_OF_DTYPE = {dtype: kind for kind, dtype in _TYPE_NAMES.items()}


def type_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.type``: a legacy type name (``'torch.HalfTensor'``, ``'torch.cuda.LongTensor'``) casts to its dtype
    (MSAdapter raised KeyError), and ``x.type()`` names every dtype (it knew float32/16 and bfloat16 only) on the
    device the tensor reports: ``torch.FloatTensor`` on the CPU backend (MSAdapter said ``torch.cuda.`` for every
    tensor), ``torch.cuda.FloatTensor`` where tensors report the accelerator, and inside megatron's optimizers'
    type checks (:mod:`mindspeed_ms.compat.tensor_type`)."""
    import mindspore

    from mindspeed_ms.compat.tensor_type import type_name

    @functools.wraps(op)
    def type_(self: Any, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        if dtype is None:
            name = _KIND_OF_DTYPE.get(str(self.dtype).lower().replace("bool", "bool_"))
            return type_name(name, bool(getattr(self, "is_cuda", True))) if name else op(self)
        if isinstance(dtype, str):
            key = dtype.rpartition(".")[2]
            if not dtype.startswith("torch.") or key not in _TYPE_NAMES:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = getattr(mindspore, _TYPE_NAMES[key])
        if self.dtype == dtype:
            return self
        return op(self, dtype)

    return type_


def dequantize(self: Any) -> Any:
    """``Tensor.dequantize`` of a non-quantized tensor: ``self`` as float32 (PyTorch's ``self.to(float)``;
    absent under MSAdapter)."""
    import mindspore
    from mindspore import ops

    return self if self.dtype == mindspore.float32 else ops.cast(self, mindspore.float32)


def from_numpy(ndarray: Any) -> Any:
    """``torch.from_numpy``: a tensor sharing the array's memory, as PyTorch's (MSAdapter copied it, so writes to
    the array were not seen). MindSpore shares C-contiguous, writeable arrays; any other array is copied (logged)."""
    import logging

    import mindspore
    import numpy as np

    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.flags.c_contiguous and ndarray.flags.writeable:
        return mindspore.Tensor.from_numpy(ndarray)
    logging.getLogger(__name__).debug("torch.from_numpy: a %s array is copied (MindSpore shares only C-contiguous, "
                                      "writeable arrays)", "read-only" if not ndarray.flags.writeable else "strided")
    return mindspore.Tensor(np.ascontiguousarray(ndarray))


def rebuild_shared_tensor(cls: Any, metadata: Any) -> Any:
    """MSAdapter's ``multiprocessing.reductions.rebuild_tensor`` (a tensor arriving from another process, e.g. a
    ``DataLoader`` worker's batch), whose tensor owns a copy of the shared-memory block it arrives in.

    MSAdapter's builds it with ``torch.from_numpy`` over the block, then unlinks and closes the block: that relied
    on ``from_numpy`` copying, and with :func:`from_numpy` sharing memory (as PyTorch's) the tensor pointed into
    unmapped memory (the first op reading it crashed the process). ``metadata`` is what MSAdapter's
    ``reduce_tensor`` sends: ``(shape, NumPy dtype, block name, requires_grad)``.
    """
    from multiprocessing import shared_memory

    import mindspore
    import msadapter
    import numpy as np

    shape, dtype, name, requires_grad = metadata
    block = shared_memory.SharedMemory(name=name)
    try:
        view: Any = np.ndarray(shape, dtype=dtype, buffer=block.buf)
        owned = view.copy()
        del view  # the block cannot close while a view of its buffer is alive
    finally:
        block.unlink()
        block.close()
    tensor = mindspore.Tensor.from_numpy(owned)
    if cls is msadapter.nn.parameter.Parameter:
        return msadapter.nn.parameter.Parameter(tensor, requires_grad=requires_grad)
    tensor.requires_grad = requires_grad
    return tensor


def tensor_new(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Legacy ``Tensor.new``: ``new(3, 2)``/``new(torch.Size)`` is an (uninitialised in PyTorch, zero here) tensor
    of that shape, ``new(data)`` a tensor of ``data``, ``new()`` an empty one; ``self``'s dtype (MSAdapter read
    ``new(3)`` as the scalar 3)."""
    import mindspore
    from mindspore import ops

    dtype = kwargs.pop("dtype", None) or self.dtype
    if not args:
        return ops.zeros((0,), dtype)
    if len(args) == 1 and isinstance(args[0], tuple) and all(isinstance(n, int) for n in args[0]):
        args = tuple(args[0])
    if all(isinstance(n, int) and not isinstance(n, bool) for n in args):
        return ops.zeros(tuple(args), dtype)
    if len(args) != 1:
        raise TypeError("new(): pass a shape (ints) or one data argument")
    return mindspore.Tensor(args[0], dtype=dtype)


def like_dtype_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``randn_like``/``rand_like``: the input's dtype unless ``dtype`` is given (MSAdapter gave float32)."""

    @functools.wraps(op)
    def like(input: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = input.dtype
        return op(input, *args, **kwargs)

    return like


def resize_(self: Any, *sizes: Any, memory_format: Any = None) -> Any:
    """``Tensor.resize_``: ``self`` takes the new shape, keeping its first elements (new ones zero where PyTorch
    leaves them uninitialised). MindSpore's ``Tensor.resize`` reads ``self.size`` as a number (a method under
    MSAdapter: TypeError). The tensor's data is replaced (``assign_value``): views of it do not follow."""
    import mindspore
    from mindspore import ops

    del memory_format
    shape = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    if any(not isinstance(n, int) or n < 0 for n in shape):
        raise RuntimeError(f"resize_: sizes must be non-negative integers, got {shape}")
    count = 1
    for n in shape:
        count *= n
    flat = self.reshape(-1)
    have = int(flat.shape[0])
    if count <= have:
        data = flat[:count] if count else ops.zeros((0,), self.dtype)
    else:
        data = ops.cat((flat, ops.zeros((count - have,), self.dtype)))
    self.assign_value(mindspore.Tensor(data.reshape(shape).asnumpy()))
    return self


class TypedStorage:
    """PyTorch's legacy ``Tensor.storage()``: the tensor's storage counted in elements of its dtype.

    MindSpore's ``storage()`` is the untyped (byte) storage: ``size()`` 24 and ``element_size()`` 1 for six float32
    elements (PyTorch: 6 and 4). Everything else (``data_ptr``, ``nbytes``, ``resize_``, ``copy_``) is the byte
    storage's; ``untyped()`` returns it.
    """

    __slots__ = ("_storage", "dtype", "_element_size")

    def __init__(self, storage: Any, dtype: Any, element_size: int) -> None:
        self._storage = storage
        self.dtype = dtype
        self._element_size = element_size

    def size(self) -> int:
        """The number of elements of ``dtype`` the storage holds."""
        return int(self._storage.nbytes()) // self._element_size

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        """The size of one element of ``dtype`` in bytes."""
        return self._element_size

    def untyped(self) -> Any:
        """The byte storage."""
        return self._storage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)


def storage_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.storage()``: a :class:`TypedStorage` over MindSpore's byte storage."""

    @functools.wraps(op)
    def storage(self: Any) -> TypedStorage:
        return TypedStorage(op(self), self.dtype, int(self.itemsize))

    return storage
