"""Point-to-point ``torch.distributed`` calls as PyTorch has them, on MindSpore's CPU backend.

Measured on 2 msrun CPU workers through MSAdapter (tests/test_collectives_conformance.py against
PyTorch's gloo): ``send``/``isend`` of a bool tensor fails ("Send failed."); ``recv``/``irecv`` into
a view returns normally and writes nothing; ``batch_isend_irecv`` has no CPU kernel
("DistCommBatchIsendIrecv unregistered"). MSAdapter's ``send`` and ``recv`` call its ``isend`` and
``irecv``, so the wrappers of those two serve all four.

On this backend an ``isend`` returns at once, while a posted ``irecv`` holds back what the same
rank posts after it until its data arrives: ``batch_isend_irecv`` therefore posts the sends first.
"""

from __future__ import annotations

import functools
from typing import Any

from mindspeed_ms.compat.cpu_collectives import CollectiveError, group_named, owned_copy, wire_dtype

__all__ = ["isend_wrapper", "irecv_wrapper", "batch_isend_irecv", "ReceiveWork"]


class ReceiveWork:
    """The handle of an ``irecv`` into a buffer of ours: ``wait`` also copies the data into the caller's tensor."""

    def __init__(self, work: Any, buffer: Any, tensor: Any) -> None:
        self._work = work
        self._buffer = buffer
        self._tensor = tensor
        self._is_copied = False

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        """Wait for the data, then write it into the tensor the caller gave ``irecv``."""
        done = self._work.wait(*args, **kwargs)
        if not self._is_copied:
            import torch

            with torch.no_grad():
                self._tensor.copy_(self._buffer.to(self._tensor.dtype))
            self._is_copied = True
        return done

    def is_completed(self) -> bool:
        """Return True once :meth:`wait` has run (the caller's tensor holds the data only then)."""
        return self._is_copied

    def __getattr__(self, name: str) -> Any:
        return getattr(self._work, name)


def isend_wrapper(isend: Any) -> Any:
    """Let ``isend`` (and ``send``, which calls it) move bool tensors: they travel as int32."""

    @functools.wraps(isend)
    def isend_(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if hasattr(tensor, "asnumpy") and wire_dtype(tensor.dtype) != tensor.dtype:
            tensor = owned_copy(tensor)
        return isend(tensor, *args, **kwargs)

    return isend_


def irecv_wrapper(irecv: Any) -> Any:
    """Let ``irecv`` (and ``recv``, which calls it) fill views and bool tensors.

    The data lands in a buffer that owns its memory, in the wire dtype, and is copied into the
    caller's tensor when the handle is waited for (``recv`` waits at once).
    """

    @functools.wraps(irecv)
    def irecv_(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if not hasattr(tensor, "asnumpy"):
            return irecv(tensor, *args, **kwargs)
        buffer = owned_copy(tensor)
        work = irecv(buffer, *args, **kwargs)
        return None if work is None else ReceiveWork(work, buffer, tensor)

    return irecv_


def batch_isend_irecv(p2p_op_list: list[Any]) -> list[Any]:
    """Post every send of ``p2p_op_list``, then every receive; return their handles in the list's order.

    ``batch_isend_irecv`` has no CPU kernel. Sends are posted first because a posted receive holds
    back what its rank posts after it; receives are waited for through their handles as in PyTorch.
    """
    import torch

    if not isinstance(p2p_op_list, list) or not p2p_op_list:
        raise CollectiveError("batch_isend_irecv", "expects a non-empty list of P2POp",
                              "pass [P2POp(torch.distributed.isend, ...), ...]")
    names = [getattr(item.op, "__name__", item.op) for item in p2p_op_list]
    if any(name not in ("isend", "irecv") for name in names):
        raise CollectiveError("batch_isend_irecv", f"every P2POp's op must be isend or irecv, got {names}",
                              "build each P2POp with torch.distributed.isend or torch.distributed.irecv")
    works: list[Any] = [None] * len(p2p_op_list)
    for wanted in ("isend", "irecv"):
        for index, (item, name) in enumerate(zip(p2p_op_list, names)):
            if name == wanted:
                function = getattr(torch.distributed, name)
                group = group_named(item.group, "batch_isend_irecv")
                works[index] = function(item.tensor, item.peer, group=group, tag=item.tag)
    return works
