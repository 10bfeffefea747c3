"""PyTorch's checkpoint format (``torch.save``/``torch.load``: data.pkl + a record per storage, zipped) on MSAdapter.

MSAdapter 0.5.0b1's ``torch.load`` knows six storage types (a PyTorch ``IntStorage``, ``DoubleStorage``,
``ShortStorage`` or ``CharStorage`` raises ``KeyError``), turns every ``torch.<dtype>`` in the pickle into a
string, and drops strides; its ``torch.save`` writes records that real PyTorch cannot map back to the
tensors (``IntStorage`` is written but not read back; dtypes pickle as MindSpore types). Megatron's legacy
checkpoints (``model_optim_rng.pt``), the common part and the objects of a distributed checkpoint, and the
tensors inside ``.distcp`` files are all this format, so the two functions here read and write it the way
PyTorch does: the same records, the same pickle (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``,
``torch.float32``...), every dtype PyTorch stores as a typed storage, bit for bit.

What cannot be carried: aliasing between tensors (PyTorch stores views of one storage once; MSAdapter
tensors do not expose shared storage, so every reference to a tensor is written with its own storage,
contiguous; a tensor object referenced twice, e.g. the one ``step`` tensor that mindspeed_ms's Adam shares
among the parameters at the same count, loads in PyTorch as two tensors, as PyTorch's own Adam keeps them) and
devices (MindSpore places tensors itself: ``map_location`` is accepted and tensors are created on the
backend's device).
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import zipfile
from collections.abc import Callable
from typing import IO, Any, Union

import numpy as np

from mindspeed_ms.compat.errors import CheckpointFormatError

__all__ = ["CheckpointFormatError", "STORAGE_DTYPES", "load", "save", "load_wrapper"]

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]

#: PyTorch storage class -> the dtype name of its elements (torch and numpy alike, except bfloat16).
STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}
_STORAGE_OF = {dtype: storage for storage, dtype in STORAGE_DTYPES.items()}
#: Names under ``torch`` that a pickle may reference besides storages (dtypes, Size, device).
_TORCH_NAMES = frozenset(STORAGE_DTYPES.values()) | {"Size", "device"}
_REBUILDERS = ("_rebuild_tensor_v2", "_rebuild_tensor", "_rebuild_parameter", "_rebuild_parameter_with_state",
               "_rebuild_from_type_v2")
_ARCHIVE = "archive"
_ALIGNMENT = 64  # PyTorch aligns every record's data to 64 bytes (needed by its mmap loading)
_WEIGHTS_ONLY_SAFE = {("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
                      ("builtins", "slice"), ("builtins", "complex")}


def _torch() -> Any:
    import torch  # MSAdapter's torch: this module only runs in MindSpore mode

    return torch


class PickleGlobal:
    """A ``module.name`` reference written as a pickle GLOBAL (PyTorch's name, not MSAdapter's object)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # pickle's save_reduce wants a callable; only its name is written
        raise TypeError(f"{self.module}.{self.name} is a pickle reference, not a function")


class _StorageRecord:
    """One tensor's bytes, written as ``data/<key>`` and referenced by a persistent id."""

    __slots__ = ("key", "storage", "data", "numel")

    def __init__(self, key: str, storage: str, data: bytes, numel: int) -> None:
        self.key, self.storage, self.data, self.numel = key, storage, data, numel


class _StorageType:
    """What ``torch.<X>Storage`` unpickles to: the element dtype of the records that name it."""

    def __init__(self, name: str) -> None:
        self.name, self.dtype = name, STORAGE_DTYPES[name]


def _dtype_names() -> dict[Any, str]:
    torch = _torch()
    return {getattr(torch, name): name for name in STORAGE_DTYPES.values()}


def _to_numpy(tensor: Any, dtype: str) -> np.ndarray:
    """Return ``tensor``'s elements, contiguous, as NumPy (bfloat16 as its raw 16-bit patterns).

    Read from a copy: a parameter whose ``.data`` was set to a view (megatron's distributed optimizer maps every
    parameter into its contiguous buffer: ``param.data = buffer[start:end].view(shape)``) computes with the view's
    offset on MSAdapter, but ``.numpy()`` of it (and of its ``detach()``) read the buffer from offset 0: the legacy
    ``torch`` format wrote the first parameter's values for every parameter. A copy is read where it lies.
    """
    torch = _torch()
    if dtype == "bfloat16":
        as_float = np.array(order="C", object=tensor.to(torch.float32).numpy())
        return (as_float.view(np.uint32) >> 16).astype(np.uint16)  # exact: a bfloat16 is a float32's top half
    return np.array(order="C", object=tensor.clone().numpy())


def _from_numpy(array: np.ndarray, dtype: str) -> Any:
    torch = _torch()
    if dtype == "bfloat16":
        widened = (array.astype(np.uint32) << 16).view(np.float32)
        return torch.tensor(np.array(order="C", object=widened)).to(torch.bfloat16)
    return torch.tensor(np.array(order="C", object=array))


#: The pure-Python pickler: its dispatch table takes our GLOBAL writer (typeshed does not describe it).
_PythonPickler: Any = pickle._Pickler  # type: ignore[attr-defined]


class TorchPickler(_PythonPickler):
    """Pickle MSAdapter objects under PyTorch's names (tensors as storage records, dtypes, sizes, devices)."""

    def __init__(self, stream: IO[bytes], protocol: int) -> None:
        super().__init__(stream, protocol)
        self.records: list[_StorageRecord] = []
        self._dtype_names = _dtype_names()
        self._dtype_globals: dict[str, PickleGlobal] = {}
        torch = _torch()
        self._tensor, self._parameter = torch.Tensor, torch.nn.Parameter
        self._size, self._device = torch.Size, torch.device

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _StorageRecord):
            return ("storage", PickleGlobal("torch", obj.storage), obj.key, "cpu", obj.numel)
        return None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, PickleGlobal):
            return NotImplemented
        if isinstance(obj, self._tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, self._size):
            return PickleGlobal("torch", "Size"), (tuple(int(item) for item in obj),)
        if isinstance(obj, self._device):
            return PickleGlobal("torch", "device"), (str(obj.type), *(() if obj.index is None else (obj.index,)))
        return NotImplemented

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        try:
            name = self._dtype_names.get(obj)
        except TypeError:  # unhashable
            name = None
        if name is not None:  # a dtype is a bare GLOBAL (torch.float32), as PyTorch pickles it
            obj = self._dtype_globals.setdefault(name, PickleGlobal("torch", name))
        super().save(obj, save_persistent_id)
        if isinstance(obj, self._tensor):
            # every reference gets its own storage: no aliasing is carried (see the module docstring)
            self.memo.pop(id(obj), None)

    def _reduce_tensor(self, tensor: Any) -> Any:
        hooks = collections.OrderedDict()  # type: ignore[var-annotated]
        if isinstance(tensor, self._parameter):
            plain = tensor.detach()
            return (PickleGlobal("torch._utils", "_rebuild_parameter"),
                    (plain, bool(tensor.requires_grad), hooks))
        dtype = self._dtype_names.get(tensor.dtype)
        if dtype is None:
            raise pickle.PicklingError(f"torch.save: no PyTorch storage type for a tensor of dtype {tensor.dtype}")
        array = _to_numpy(tensor.detach(), dtype)
        record = _StorageRecord(str(len(self.records)), _STORAGE_OF[dtype], array.tobytes(), int(array.size))
        self.records.append(record)
        shape = tuple(int(item) for item in tensor.shape)
        strides: list[int] = []
        step = 1
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= max(extent, 1)
        return (PickleGlobal("torch._utils", "_rebuild_tensor_v2"),
                (record, 0, shape, tuple(strides), False, hooks))

    def _save_global_reference(self, obj: PickleGlobal) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch = dict(_PythonPickler.dispatch)
    dispatch[PickleGlobal] = _save_global_reference


def _aligned_info(archive: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    assert archive.fp is not None
    start = archive.fp.tell() + 30 + len(name.encode("utf-8")) + 4
    padding = (-start) % _ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", padding) + b"Z" * padding
    return info


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Write ``obj`` as PyTorch's ``torch.save`` does (zip format); real PyTorch's ``torch.load`` reads it.

    Args:
        obj: what to save (tensors, parameters, dtypes, containers, picklable objects).
        f: a path or a binary stream.
        pickle_module: accepted for PyTorch's signature; the standard pickle protocol is written.
        pickle_protocol: the protocol of ``data.pkl`` (PyTorch's default, 2).
        _use_new_zipfile_serialization: must be true: the legacy tar format is not written.
        _disable_byteorder_record: leave out the ``byteorder`` record, as PyTorch does.

    Raises:
        CheckpointFormatError: ``_use_new_zipfile_serialization=False`` was asked for.
    """
    del pickle_module
    if not _use_new_zipfile_serialization:
        raise CheckpointFormatError(str(f), "the legacy (pre-1.6, tar) format is not written under MSAdapter; "
                                            "save with the default zip format")
    buffer = io.BytesIO()
    pickler = TorchPickler(buffer, pickle_protocol)
    pickler.dump(obj)
    # A stream gets the archive built from offset 0 (zip offsets are relative to the archive's start, and
    # distributed checkpoints write several archives one after another into one file).
    target: Any = io.BytesIO() if hasattr(f, "write") else open(os.fspath(f), "wb")  # type: ignore[arg-type]
    try:
        with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            archive.writestr(_aligned_info(archive, f"{_ARCHIVE}/data.pkl"), buffer.getvalue())
            if not _disable_byteorder_record:
                archive.writestr(_aligned_info(archive, f"{_ARCHIVE}/byteorder"), "little")
            for record in pickler.records:
                archive.writestr(_aligned_info(archive, f"{_ARCHIVE}/data/{record.key}"), record.data)
            archive.writestr(_aligned_info(archive, f"{_ARCHIVE}/version"), "3\n")
            archive.writestr(_aligned_info(archive, f"{_ARCHIVE}/.data/version"), "3\n")
        if hasattr(f, "write"):
            f.write(target.getbuffer())  # type: ignore[union-attr]
    finally:
        target.close()


class _Unpickler(pickle.Unpickler):
    def __init__(self, stream: IO[bytes], archive: zipfile.ZipFile, prefix: str, big_endian: bool, source: str,
                 weights_only: bool, **kwargs: Any) -> None:
        super().__init__(stream, **kwargs)
        self._archive, self._prefix, self._big_endian = archive, prefix, big_endian
        self._source, self._weights_only = source, weights_only
        self._storages: dict[str, tuple[np.ndarray, str]] = {}

    def find_class(self, module: str, name: str) -> Any:
        if module in ("torch._utils", "msadapter._utils", "torch._tensor", "msadapter._tensor") \
                and name in _REBUILDERS:
            return getattr(self, name)
        if module in ("torch", "msadapter"):
            if name in STORAGE_DTYPES:
                return _StorageType(name)
            if name in _TORCH_NAMES:
                return getattr(_torch(), name)
        if self._weights_only and (module, name) not in _WEIGHTS_ONLY_SAFE:
            raise CheckpointFormatError(
                self._source, f"weights_only=True refuses the global {module}.{name} (as PyTorch does); load a "
                              f"file you trust with weights_only=False")
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and pid and pid[0] in ("storage", b"storage")):
            raise CheckpointFormatError(self._source, f"unknown persistent id {pid!r}")
        storage_type, key, _location, _numel = pid[1:5]
        if key not in self._storages:
            if not isinstance(storage_type, _StorageType):
                raise CheckpointFormatError(self._source, f"storage {key} has an unknown type {storage_type!r}")
            raw = self._archive.read(f"{self._prefix}data/{key}")
            dtype = storage_type.dtype
            stored = np.dtype("uint16" if dtype == "bfloat16" else dtype)
            array = np.frombuffer(raw, stored.newbyteorder(">") if self._big_endian else stored)
            self._storages[key] = (array.astype(stored), dtype)
        return self._storages[key]

    def _rebuild_tensor_v2(self, storage: tuple[np.ndarray, str], offset: int, size: Any, stride: Any,
                           requires_grad: bool = False, backward_hooks: Any = None, metadata: Any = None) -> Any:
        array, dtype = storage
        size, stride = tuple(size), tuple(stride)
        if 0 in size:
            elements = np.empty(size, array.dtype)
        else:
            extent = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
            if extent > array.size:
                raise CheckpointFormatError(self._source, f"a tensor of size {size} and stride {stride} reaches "
                                                          f"element {extent} of a storage of {array.size}")
            base = array[offset:]
            elements = np.lib.stride_tricks.as_strided(base, size, [s * array.itemsize for s in stride])
        tensor = _from_numpy(elements, dtype)
        if requires_grad:
            tensor.requires_grad_(True)
        return tensor

    def _rebuild_tensor(self, storage: tuple[np.ndarray, str], offset: int, size: Any, stride: Any) -> Any:
        return self._rebuild_tensor_v2(storage, offset, size, stride)

    def _rebuild_parameter(self, data: Any, requires_grad: bool, backward_hooks: Any, *state: Any) -> Any:
        return _torch().nn.Parameter(data, requires_grad=requires_grad)

    _rebuild_parameter_with_state = _rebuild_parameter

    def _rebuild_from_type_v2(self, func: Callable[..., Any], new_type: Any, args: Any, state: Any) -> Any:
        return func(*args)


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Read a file written by PyTorch's ``torch.save`` (zip format) or by :func:`save`, as MSAdapter objects.

    Args:
        f: a path or a binary stream.
        map_location: accepted for PyTorch's signature (MindSpore places the tensors).
        pickle_module: accepted for PyTorch's signature.
        weights_only: refuse globals other than tensors, dtypes and plain containers (PyTorch's rule).
        mmap: accepted for PyTorch's signature (the records are read).
        pickle_load_args: passed to the unpickler (e.g. ``encoding``).

    Returns:
        The saved object with MSAdapter tensors (same dtypes, shapes, values; parameters as parameters).

    Raises:
        CheckpointFormatError: not a zip checkpoint, or a record that does not fit.
    """
    del map_location, pickle_module, mmap
    source = os.fspath(f) if isinstance(f, (str, os.PathLike)) else "<stream>"
    stream: Any = open(source, "rb") if isinstance(f, (str, os.PathLike)) else f
    try:
        position = stream.tell()
        if not zipfile.is_zipfile(stream):
            raise CheckpointFormatError(source, "not a zip checkpoint (PyTorch's legacy tar format is not read)")
        stream.seek(position)
        with zipfile.ZipFile(stream) as archive:
            names = archive.namelist()
            pickles = [name for name in names if name.endswith("data.pkl") and name.count("/") == 1]
            if not pickles:
                raise CheckpointFormatError(source, "no <archive>/data.pkl record")
            prefix = pickles[0][: -len("data.pkl")]
            big_endian = f"{prefix}byteorder" in names and archive.read(f"{prefix}byteorder") == b"big"
            pickle_load_args.setdefault("encoding", "utf-8")
            with archive.open(pickles[0]) as data:
                unpickler = _Unpickler(io.BytesIO(data.read()), archive, prefix, big_endian, source,
                                       bool(weights_only), **pickle_load_args)
                return unpickler.load()
    finally:
        if stream is not f:
            stream.close()


def load_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    """Read zip checkpoints with :func:`load`; hand anything else (the legacy tar format) to ``original``."""
    import functools

    @functools.wraps(original)
    def load_checkpoint(f: FileLike, *args: Any, **kwargs: Any) -> Any:
        if isinstance(f, (str, os.PathLike)):
            with open(os.fspath(f), "rb") as probe:
                is_zip = zipfile.is_zipfile(probe)
        else:
            position = f.tell()
            is_zip = zipfile.is_zipfile(f)
            f.seek(position)
        return load(f, *args, **kwargs) if is_zip else original(f, *args, **kwargs)

    return load_checkpoint
