"""The ``.metadata`` file of a distributed checkpoint (``torch.distributed.checkpoint``) as PyTorch writes it.

MSAdapter's port of ``torch.distributed.checkpoint`` pickles its metadata with MSAdapter's class paths
(``msadapter.distributed.checkpoint.metadata.Metadata``), MindSpore dtypes and a three-field
``TensorProperties`` state; PyTorch writes ``torch.distributed.checkpoint...`` paths, ``torch.float32`` and
a five-field state (dtype, layout, requires_grad, memory-format encoding, pin_memory). So neither reads the
other's checkpoints. Here MSAdapter writes PyTorch's pickle, reads both, and its ``TensorProperties``
accepts the ``layout``/``memory_format`` arguments megatron-core passes (MSAdapter tensors are always
strided and contiguous, so the two are accepted and not stored).
"""

from __future__ import annotations

import enum
import functools
import os
import pickle
from typing import IO, Any, Callable, cast

from mindspeed_ms.compat.serialization import PickleGlobal, TorchPickler

__all__ = ["dump_metadata", "load_metadata", "finish", "read_metadata", "tensor_properties_init_wrapper",
           "tensor_properties_setstate"]

_MSADAPTER_PREFIX = "msadapter.distributed."
_METADATA_FILE = ".metadata"
_CONTIGUOUS_FORMAT = 0  # _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT, in PyTorch and MSAdapter alike


class _Call:
    """``callable(*args)`` in the pickle: PyTorch's objects that MSAdapter lacks (an enum member)."""

    __slots__ = ("target", "args")

    def __init__(self, target: PickleGlobal, args: tuple[Any, ...]) -> None:
        self.target, self.args = target, args


def _torch_module(module: str) -> str:
    return "torch." + module[len("msadapter."):]


class _MetadataPickler(TorchPickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _Call):
            return obj.target, obj.args
        cls = type(obj)
        module = getattr(cls, "__module__", "") or ""
        if not module.startswith(_MSADAPTER_PREFIX):
            return super().reducer_override(obj)
        reference = PickleGlobal(_torch_module(module), cls.__qualname__)
        if isinstance(obj, enum.Enum):
            return reference, (obj.value,)
        if cls.__name__ == "TensorProperties":
            memory_format = _Call(PickleGlobal("torch.distributed.checkpoint.metadata", "_MEM_FORMAT_ENCODING"),
                                  (_CONTIGUOUS_FORMAT,))
            layout = _Call(PickleGlobal("torch.serialization", "_get_layout"), ("torch.strided",))  # PyTorch's pickle
            state: Any = (obj.dtype, layout, bool(obj.requires_grad), memory_format,
                          bool(getattr(obj, "pin_memory", False)))
        elif "__getstate__" in vars(cls):
            state = obj.__getstate__()
        else:
            state = dict(vars(obj))
        return PickleGlobal("copyreg", "_reconstructor"), (reference, PickleGlobal("builtins", "object"), None), state


def dump_metadata(metadata: Any, stream: IO[bytes]) -> None:
    """Pickle a checkpoint's ``Metadata`` as PyTorch does (PyTorch's class paths, dtypes and states)."""
    _MetadataPickler(stream, pickle.DEFAULT_PROTOCOL).dump(metadata)


def finish(self: Any, metadata: Any, results: list[list[Any]]) -> None:
    """Write the checkpoint's ``.metadata`` in PyTorch's pickle; replaces MSAdapter's ``FileSystemWriter.finish``."""
    storage_md = {}
    for write_results in results:
        storage_md.update({result.index: result.storage_data for result in write_results})
    metadata.storage_data = storage_md
    metadata.storage_meta = self.storage_meta()
    tmp_path = self.fs.concat_path(self.path, f"{_METADATA_FILE}.tmp")
    with self.fs.create_stream(tmp_path, "wb") as stream:
        dump_metadata(metadata, cast(IO[bytes], stream))
        if self.sync_files:
            try:
                os.fsync(stream.fileno())
            except AttributeError:
                os.sync()
    if self.fs.exists(self.metadata_path):
        self.fs.rm_file(self.metadata_path)
    self.fs.rename(tmp_path, self.metadata_path)


def _layout(name: str) -> Any:
    import torch  # MSAdapter's: one layout, strided

    layout = getattr(torch, name.rpartition(".")[2], None)
    if layout is None:
        raise pickle.UnpicklingError(f"checkpoint metadata: layout {name!r} does not exist under MSAdapter")
    return layout


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("torch.serialization", "_get_layout"):
            return _layout
        return super().find_class(module, name)  # torch.* resolves to MSAdapter's modules


def load_metadata(stream: IO[bytes]) -> Any:
    """Unpickle a checkpoint's ``Metadata`` written by PyTorch or by :func:`dump_metadata`."""
    return _MetadataUnpickler(stream).load()


def read_metadata(self: Any) -> Any:
    """Read ``.metadata`` written by PyTorch or MSAdapter; replaces MSAdapter's ``FileSystemReader.read_metadata``."""
    from msadapter.distributed.checkpoint.metadata import StorageMeta

    path = self.fs.concat_path(self.path, _METADATA_FILE)
    with self.fs.create_stream(path, "rb") as stream:
        metadata = load_metadata(cast(IO[bytes], stream))
    if getattr(metadata, "storage_meta", None) is None:
        metadata.storage_meta = StorageMeta()
    metadata.storage_meta.load_id = self.load_id
    return metadata


def tensor_properties_setstate(self: Any, state: tuple[Any, ...]) -> None:
    """Restore ``TensorProperties`` from PyTorch's five-field state or MSAdapter's three-field one."""
    if len(state) == 5:  # PyTorch: dtype, layout, requires_grad, memory-format encoding, pin_memory
        self.dtype, _layout, self.requires_grad, _memory_format, self.pin_memory = state
    else:
        self.dtype, self.requires_grad, self.pin_memory = state


def tensor_properties_init_wrapper(init: Callable[..., Any]) -> Callable[..., Any]:
    """Accept PyTorch's ``layout``/``memory_format`` arguments (megatron-core passes them) in ``TensorProperties``."""

    @functools.wraps(init)
    def accept_layout(self: Any, *args: Any, layout: Any = None, memory_format: Any = None, **kwargs: Any) -> None:
        del layout, memory_format  # MSAdapter tensors are always strided and contiguous
        init(self, *args, **kwargs)

    return accept_layout
