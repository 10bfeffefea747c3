"""Communication groups and collectives for the compute-communication (CoC) ops.

The group is, in order: an explicit ``group=`` (a MindSpore group name or an MSAdapter
``ProcessGroup``), megatron-core's tensor-parallel group when ``megatron.core.parallel_state`` is
already imported and initialised (it is never imported here), else the world group. Without
``mindspore.communication.init()`` and without an explicit group there is a single rank and the
collectives are identities.

MindSpore's CPU backend has no reduce-scatter kernel in any form (see ENVIRONMENT.md): on CPU,
:func:`reduce_scatter_rows` all-reduces and keeps this rank's rows, which moves ``world_size``
times more data than a real reduce-scatter but gives the same result.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Any

from mindspore import Tensor, ops

from mindspeed_ms.device import device_target
from mindspeed_ms.ops._validate import OpArgumentError, OpDTypeError

__all__ = ["CommGroup", "resolve_group", "all_reduce", "all_gather_rows", "reduce_scatter_rows"]


@dataclass(frozen=True)
class CommGroup:
    """A resolved group: MindSpore group name (None for a lone process), its size and this rank."""

    name: str | None
    size: int
    rank: int


def _megatron_tp_group() -> Any:
    parallel_state = sys.modules.get("megatron.core.parallel_state")
    if parallel_state is None:
        return None
    is_initialized = getattr(parallel_state, "model_parallel_is_initialized", None)
    if is_initialized is None or not is_initialized():
        return None
    return parallel_state.get_tensor_model_parallel_group()


def _process_group_name(pg: Any) -> Any:
    c10d = sys.modules.get("msadapter.distributed.distributed_c10d")
    lookup = getattr(c10d, "_get_process_group_name", None)
    name = lookup(pg) if lookup is not None else None
    # ProcessGroup.group_name raises for groups without a backend; the registry lookup does not.
    return name if isinstance(name, str) and name != "None" else getattr(pg, "group_name", None)


def _from_process_group(op: str, group: Any, world_name: str) -> CommGroup:
    size = getattr(group, "size", None)
    if not callable(size):
        raise OpDTypeError(
            op, "group", f"expected a MindSpore group name or an MSAdapter ProcessGroup, got {type(group).__name__}"
        )
    from mindspore.communication import get_group_size, get_rank

    n = int(size())
    if n == 1:
        return CommGroup(None, 1, 0)
    # MSAdapter creates a MindSpore group under the ProcessGroup's name for every group except the
    # default one; a group spanning the whole world is the world group either way.
    name = world_name if n == get_group_size() else _process_group_name(group)
    if not isinstance(name, str):
        raise OpDTypeError(op, "group", f"cannot find the MindSpore group name of {group!r}")
    return CommGroup(name, n, int(get_rank(name)))


def resolve_group(op: str, group: Any = None) -> CommGroup:
    """Resolve ``group`` (or the default) to a :class:`CommGroup`.

    Args:
        op: the calling op's name, for error messages.
        group: explicit group, or None for the default.

    Returns:
        The resolved group.

    Raises:
        TypeError: if ``group`` is neither a string nor a ProcessGroup.
        ValueError: if a group is named but MindSpore's communication is not initialised.
    """
    from mindspore.communication import GlobalComm, get_group_size, get_rank

    explicit = group is not None
    if group is None:
        group = _megatron_tp_group()
    if group is None and not GlobalComm.INITED:
        return CommGroup(None, 1, 0)
    if not GlobalComm.INITED:
        raise OpArgumentError(
            op,
            "group",
            "needs mindspore.communication.init() first (run under msrun)"
            if explicit
            else "megatron's tensor-parallel group is set but MindSpore's communication is not initialised",
        )
    if group is not None and not isinstance(group, str):
        return _from_process_group(op, group, GlobalComm.WORLD_COMM_GROUP)
    name = GlobalComm.WORLD_COMM_GROUP if group is None else group
    return CommGroup(name, int(get_group_size(name)), int(get_rank(name)))


@functools.cache
def _all_reduce_prim(name: str) -> Any:
    return ops.AllReduce(ops.ReduceOp.SUM, name)


@functools.cache
def _all_gather_prim(name: str) -> Any:
    return ops.AllGather(name)


@functools.cache
def _reduce_scatter_prim(name: str) -> Any:
    return ops.ReduceScatter(ops.ReduceOp.SUM, name)


def all_reduce(x: Tensor, group: CommGroup) -> Tensor:
    """Sum ``x`` over the group."""
    if group.name is None or group.size == 1:
        return x
    return _all_reduce_prim(group.name)(x)


def all_gather_rows(x: Tensor, group: CommGroup) -> Tensor:
    """Concatenate every rank's ``x`` along dimension 0, in rank order."""
    if group.name is None or group.size == 1:
        return x
    return _all_gather_prim(group.name)(x)


def reduce_scatter_rows(x: Tensor, group: CommGroup) -> Tensor:
    """Sum ``x`` over the group and return this rank's block of ``rows / size`` rows.

    On CPU (no reduce-scatter kernel) this is an all-reduce followed by a slice.
    """
    if group.name is None or group.size == 1:
        return x
    if device_target() == "CPU":
        chunk = x.shape[0] // group.size
        return all_reduce(x, group)[group.rank * chunk : (group.rank + 1) * chunk]
    return _reduce_scatter_prim(group.name)(x)
