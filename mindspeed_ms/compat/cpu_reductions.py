"""Reducing ``torch.distributed`` collectives as PyTorch has them, on MindSpore's CPU collectives.

Measured on 2 msrun CPU workers through MSAdapter (tests/test_collectives_conformance.py against
PyTorch's gloo): ``all_reduce`` fails on float64 ("AllReduce failed.", every op) and on bool
(every collective fails on bool); ``ReduceOp.AVG`` is refused ("Failed calling DistCommAllReduce");
``reduce`` has no CPU kernel ("Unsupported op [Reduce] on CPU"); into a view nothing is written;
``scatter`` into a view writes nothing either. The replacements here give every rank what PyTorch
gives it, or raise :class:`~mindspeed_ms.compat.cpu_collectives.CollectiveError` where PyTorch
raises too.
"""

from __future__ import annotations

import functools
from typing import Any

from mindspeed_ms.compat.cpu_collectives import CollectiveError, CompletedWork, owned_copy, zeros_tensor

__all__ = ["all_reduce_wrapper", "reduce", "scatter_wrapper", "gather_wrapper"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _is_mindspore(tensor: Any) -> bool:
    return hasattr(tensor, "asnumpy")


#: ``_op_name``'s answers by the op's value (megatron all-reduces a few times a step, each over the names)
_OP_NAMES: dict[Any, str] = {}


def _op_name(op: Any) -> str:
    """``"SUM"``, ``"AVG"``, ``"MAX"``, ... for a ``ReduceOp`` member or instance of MSAdapter."""
    value = getattr(op, "op", op)
    try:
        return _OP_NAMES[value]
    except (KeyError, TypeError):  # not asked yet, or unhashable
        pass
    name = _find_op_name(value)
    try:
        _OP_NAMES[value] = name
    except TypeError:
        pass
    return name


def _find_op_name(value: Any) -> str:
    import torch

    if value is None:
        return "SUM"
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if value == getattr(torch.distributed.ReduceOp, name, object()):
            return name
    return str(value).upper()


def _dtype_name(dtype: Any) -> str:
    return str(dtype).split(".")[-1].lower()


def _reduce_locally(parts: list[Any], op: str) -> Any:
    """Reduce the gathered tensors in rank order (the CPU AllReduce kernel refuses float64)."""
    import torch

    combine = {"SUM": torch.add, "AVG": torch.add, "PRODUCT": torch.mul, "MIN": torch.minimum,
               "MAX": torch.maximum}[op]
    return functools.reduce(combine, parts)


def _average(total: Any, size: int) -> Any:
    """``total / size`` in ``total``'s dtype (bfloat16 has no CPU division kernel: through float32)."""
    import torch

    shape = tuple(total.shape)
    flat = total.reshape(-1)  # a 0-d division raises 'Expected a NumPy array' on CPU
    if flat.dtype == torch.bfloat16:
        return (flat.to(torch.float32) / size).to(torch.bfloat16).reshape(shape)
    return (flat / size).reshape(shape)


def _check_op(name: str, op: str, dtype: Any) -> None:
    if op == "AVG" and _dtype_name(dtype) not in _FLOATS:
        raise CollectiveError(name, f"ReduceOp.AVG of a {_dtype_name(dtype)} tensor (PyTorch: result type Float "
                                    f"can't be cast to the desired output type)", "average a floating-point tensor")
    if op not in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        raise CollectiveError(name, f"ReduceOp.{op} has no implementation on the CPU backend",
                              "use SUM, AVG, PRODUCT, MIN or MAX")


def _reduced(tensor: Any, op: str, group: Any, all_reduce: Any) -> Any:
    """An owned tensor holding the reduction of ``tensor`` over ``group``, in ``tensor``'s dtype."""
    import torch

    size = torch.distributed.get_world_size(group)
    wire = owned_copy(tensor)
    if _dtype_name(tensor.dtype) == "float64":  # moved losslessly by all_gather, reduced here
        parts = [zeros_tensor(tuple(wire.shape), wire.dtype) for _ in range(size)]
        torch.distributed.all_gather(parts, wire, group=group)
        result = _reduce_locally(parts, op)
    else:
        native = torch.distributed.ReduceOp.SUM if op == "AVG" else getattr(torch.distributed.ReduceOp, op)
        work = all_reduce(wire, native, group, False)
        if hasattr(work, "wait"):
            work.wait()
        result = wire
    if op == "AVG":
        if _dtype_name(tensor.dtype) == "bfloat16":  # PyTorch sums in bfloat16, then divides
            result = result.to(torch.bfloat16)
        result = _average(result, size)
    return result.to(tensor.dtype)


def all_reduce_wrapper(all_reduce: Any) -> Any:
    """Give ``all_reduce`` PyTorch's results for every dtype and op on CPU (wrap of MSAdapter's).

    float64 travels through ``all_gather`` (which moves it losslessly) and is reduced in rank order;
    bool travels as int32 (SUM and MAX give OR, MIN and PRODUCT AND, as PyTorch); AVG is a SUM divided
    by the group size; the result is written into the caller's tensor, a view included. An async
    call has finished when it returns (its handle's ``wait`` returns at once).
    """

    @functools.wraps(all_reduce)
    def all_reduce_(tensor: Any, op: Any = None, group: Any = None, async_op: bool = False) -> Any:
        import torch

        if not _is_mindspore(tensor) or torch.distributed.get_rank(group) < 0:  # not a member: PyTorch skips
            return all_reduce(tensor, op, group, async_op)

        name = _op_name(op)
        _check_op("all_reduce", name, tensor.dtype)
        if torch.distributed.get_world_size(group) == 1:  # every op over one rank is the identity, AVG too
            return CompletedWork() if async_op else None
        with torch.no_grad():
            result = _reduced(tensor, name, group, all_reduce)
            tensor.copy_(result)
        return CompletedWork() if async_op else None

    return all_reduce_


def reduce(tensor: Any, dst: int | None = None, op: Any = None, group: Any = None, async_op: bool = False,
           group_dst: int | None = None) -> CompletedWork | None:
    """Reduce ``tensor`` over ``group`` into ``dst``'s ``tensor`` (``torch.distributed.reduce``: no CPU kernel).

    Every rank all-reduces a copy; only the destination writes the result into its tensor (the
    others' tensors are left as they were). ``dst`` is a global rank, ``group_dst`` a rank in
    ``group`` (one of them, as in PyTorch).
    """
    import torch

    name = _op_name(op)
    _check_op("reduce", name, tensor.dtype)
    if (dst is None) == (group_dst is None):
        raise CollectiveError("reduce", "pass exactly one of dst and group_dst", "name the destination rank once")
    if group_dst is None:
        group_dst = dst if group is None else int(torch.distributed.get_group_rank(group, dst))
    copy = owned_copy(tensor).to(tensor.dtype)
    torch.distributed.all_reduce(copy, op=getattr(torch.distributed.ReduceOp, name), group=group)
    if torch.distributed.get_rank(group) == group_dst:
        with torch.no_grad():
            tensor.copy_(copy)
    return CompletedWork() if async_op else None


def scatter_wrapper(scatter: Any) -> Any:
    """Let ``scatter`` write into a view and move bool tensors (wrap of MSAdapter's; same CPU gaps)."""

    @functools.wraps(scatter)
    def scatter_(tensor: Any, scatter_list: list[Any] | None = None, *args: Any, **kwargs: Any) -> Any:
        if not _is_mindspore(tensor):
            return scatter(tensor, scatter_list, *args, **kwargs)
        import torch

        owned = owned_copy(tensor)
        wires = None if scatter_list is None else [owned_copy(item) for item in scatter_list]
        work = scatter(owned, wires, *args, **kwargs)
        if hasattr(work, "wait"):
            work.wait()
        with torch.no_grad():
            tensor.copy_(owned.to(tensor.dtype))
        return CompletedWork() if hasattr(work, "wait") else work

    return scatter_


def gather_wrapper(gather: Any) -> Any:
    """Let ``gather`` fill views and move bool tensors (wrap of MSAdapter's; same CPU gaps)."""

    @functools.wraps(gather)
    def gather_(tensor: Any, gather_list: list[Any] | None = None, *args: Any, **kwargs: Any) -> Any:
        if not _is_mindspore(tensor):
            return gather(tensor, gather_list, *args, **kwargs)
        import torch

        wire = owned_copy(tensor)
        parts = None if gather_list is None else [owned_copy(item) for item in gather_list]
        work = gather(wire, parts, *args, **kwargs)
        if hasattr(work, "wait"):
            work.wait()
        with torch.no_grad():
            for target, part in zip(gather_list or [], parts or []):
                target.copy_(part.to(target.dtype))
        return CompletedWork() if hasattr(work, "wait") else work

    return gather_
