"""``torch.distributed`` collectives that have no kernel on MindSpore's CPU backend, built from ones that do.

Under MSAdapter on the CPU, ``all_reduce``, the list form of ``all_gather``, ``send``/``recv`` and
``broadcast`` work; ``all_gather_into_tensor``/``_all_gather_base`` ("DistCommAllGatherIntoTensor
unregistered"), ``reduce_scatter_tensor``/``_reduce_scatter_base`` and ``all_to_all_single``
("DistCommAllToAllVSingle unregistered") do not. Megatron's sequence parallelism, its distributed
optimizer and its MoE alltoall token dispatcher call them. The replacements here have the same
results (every rank gets what PyTorch gives it) at the price of more traffic, which does not matter
for CPU runs; they are synchronous, and return a completed handle when ``async_op`` is asked for.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.compat.errors import CollectiveError

__all__ = ["CompletedWork", "CollectiveError", "all_gather_into_tensor", "all_gather_object", "gather_object",
           "broadcast_object_list", "reduce_scatter_tensor", "all_to_all_single", "all_to_all", "all_gather_wrapper",
           "reduce_scatter", "into_caller_wrapper", "IN_PLACE_COLLECTIVES", "group_named", "mint_all_to_all_single"]

#: Collectives that write their result into their first argument (``tensor``) and need nothing else converted.
IN_PLACE_COLLECTIVES = ("broadcast",)


class CompletedWork:
    """The handle of a collective that has already finished (``async_op=True`` callers wait on it)."""

    def wait(self, timeout: Any = None) -> bool:
        """Return True at once: the work is done."""
        del timeout
        return True

    def is_completed(self) -> bool:
        """Return True: the work is done."""
        return True


def _done(async_op: bool) -> CompletedWork | None:
    return CompletedWork() if async_op else None


def wire_dtype(dtype: Any) -> Any:
    """The dtype a tensor of ``dtype`` travels as: booleans as int32 (every CPU collective fails on bool)."""
    import torch

    return torch.int32 if dtype == torch.bool else dtype


def owned_copy(tensor: Any) -> Any:
    """A copy that owns its memory, in its wire dtype (:func:`wire_dtype`)."""
    import torch

    if wire_dtype(tensor.dtype) != tensor.dtype:
        return tensor.to(wire_dtype(tensor.dtype))
    if not hasattr(tensor, "asnumpy"):  # real PyTorch (the reference's gloo lacks the same collectives)
        return tensor.clone()
    with torch.no_grad():
        if tensor.dtype == torch.bfloat16:  # no CPU Identity kernel for bfloat16; the round trip is exact
            return tensor.to(torch.float32).to(torch.bfloat16)
        from mindspore import ops

        return ops.deepcopy(tensor)


def zeros_tensor(shape: Any, dtype: Any) -> Any:
    """``torch.zeros(shape, dtype=dtype)``; bfloat16 through float32 (no CPU fill kernel for bfloat16)."""
    import torch

    if dtype == torch.bfloat16:
        return torch.zeros(shape, dtype=torch.float32).to(dtype)
    return torch.zeros(shape, dtype=dtype)


def _padded(flat: Any, length: int) -> Any:
    """``flat`` (1-d) followed by zeros up to ``length``; not by slice assignment, which keeps only the low
    32 bits of int64 values under MSAdapter (``buffer[:n] = tensor``)."""
    import torch

    missing = length - int(flat.shape[0])
    return torch.cat([flat, zeros_tensor((missing, *flat.shape[1:]), flat.dtype)]) if missing else flat


def _same_memory(output: Any, source: Any) -> bool:
    """Whether ``output`` and ``source`` are contiguous tensors of one dtype and size over the same memory."""
    return (hasattr(output, "asnumpy") and hasattr(source, "asnumpy") and output.dtype == source.dtype
            and output.numel() == source.numel() and output.is_contiguous() and source.is_contiguous()
            and output.data_ptr() == source.data_ptr())


def _one_rank_source(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[bool, bool]:
    """For ``broadcast(tensor, src, group, async_op)``'s other arguments: (whether the group has this rank alone
    and ``src`` is this rank: nothing to send or receive, as PyTorch's broadcast then), ``async_op``)."""
    import torch

    names = ("src", "group", "async_op")
    if len(args) > len(names) or not set(kwargs) <= set(names):
        return False, False
    bound = dict(zip(names, args), **kwargs)
    src, group, async_op = bound.get("src"), bound.get("group"), bound.get("async_op", False)
    if type(src) is not int or torch.distributed.get_world_size(group) != 1:
        return False, False
    return torch.distributed.get_rank(group) == 0 and torch.distributed.get_rank() == src, bool(async_op)


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                           async_op: bool = False) -> CompletedWork | None:
    """Gather ``input_tensor`` from every rank of ``group`` into ``output_tensor``, concatenated along dim 0.

    ``output_tensor`` may also be shaped ``[world_size, *input.shape]`` (PyTorch accepts both).
    """
    import torch

    size = torch.distributed.get_world_size(group)
    if size == 1 and _same_memory(output_tensor, input_tensor):  # one rank, its input already in place
        return _done(async_op)
    local = owned_copy(input_tensor.contiguous())
    parts = [zeros_tensor(tuple(local.shape), local.dtype) for _ in range(size)]
    torch.distributed.all_gather(parts, local, group=group)
    output_tensor.copy_(torch.cat(parts, dim=0).reshape(tuple(output_tensor.shape)).to(output_tensor.dtype))
    return _done(async_op)


def reduce_scatter_tensor(output: Any, input: Any, op: Any = None, group: Any = None,  # noqa: A002  (torch's name)
                          async_op: bool = False) -> CompletedWork | None:
    """Reduce ``input`` over ``group`` and give each rank its block of dim 0 (``reduce_scatter_tensor``)."""
    import torch

    size = torch.distributed.get_world_size(group)
    rank = torch.distributed.get_rank(group)
    reduced = owned_copy(input.contiguous())
    torch.distributed.all_reduce(reduced, op=_reduce_op(op), group=group)
    output.copy_(reduced.reshape(size, -1)[rank].reshape(tuple(output.shape)))
    return _done(async_op)


def _split_sizes(sizes: Any, total: int, world: int) -> list[int]:
    if sizes is None or len(sizes) == 0:
        if total % world:
            raise ValueError(f"all_to_all_single: dim 0 ({total}) is not divisible by the group size ({world})")
        return [total // world] * world
    return [int(size) for size in sizes]


def all_to_all_single(output: Any, input: Any, output_split_sizes: Any = None,  # noqa: A002  (torch's name)
                      input_split_sizes: Any = None, group: Any = None,
                      async_op: bool = False) -> CompletedWork | None:
    """Send block ``j`` of ``input`` (dim 0) to rank ``j`` and receive rank ``j``'s block ``rank`` into ``output``.

    Built from the list ``all_gather``: every rank's input, padded to the longest, and its split
    sizes are gathered, and each rank keeps the blocks meant for it, in rank order.
    """
    import torch

    world = torch.distributed.get_world_size(group)
    rank = torch.distributed.get_rank(group)
    rows = int(input.shape[0])
    send_sizes = _split_sizes(input_split_sizes, rows, world)
    tail = tuple(input.shape[1:])
    sizes = torch.tensor([rows, *send_sizes], dtype=torch.int64)
    all_sizes = [torch.zeros(world + 1, dtype=torch.int64) for _ in range(world)]
    torch.distributed.all_gather(all_sizes, sizes, group=group)
    table = [[int(value) for value in item.tolist()] for item in all_sizes]
    longest = max(max(row[0] for row in table), 1)
    padded = owned_copy(_padded(input.reshape(rows, *tail), longest))
    gathered = [zeros_tensor(tuple(padded.shape), padded.dtype) for _ in range(world)]
    torch.distributed.all_gather(gathered, padded, group=group)
    blocks = []
    for source in range(world):
        source_sizes = table[source][1:]
        start = sum(source_sizes[:rank])
        blocks.append(gathered[source][start:start + source_sizes[rank]])
    received = torch.cat(blocks, dim=0)
    expected = _split_sizes(output_split_sizes, int(output.shape[0]), world)
    if int(received.shape[0]) != sum(expected):
        raise ValueError(f"all_to_all_single: received {int(received.shape[0])} rows, output expects {sum(expected)}")
    output.copy_(received.reshape(tuple(output.shape)).to(output.dtype))
    return _done(async_op)


def all_to_all(output_tensor_list: list[Any], input_tensor_list: list[Any], group: Any = None,
               async_op: bool = False) -> CompletedWork | None:
    """Send ``input_tensor_list[j]`` to rank ``j`` and receive rank ``j``'s tensor into ``output_tensor_list[j]``.

    MSAdapter's process group has no ``alltoall`` ("'ProcessGroup' object has no attribute 'alltoall'";
    MindSpeed's unaligned Ulysses context parallel calls it): the tensors travel flattened through
    :func:`all_to_all_single` with one split per rank.
    """
    import torch

    sends = [int(item.numel()) for item in input_tensor_list]
    receives = [int(item.numel()) for item in output_tensor_list]
    flat_input = torch.cat([item.reshape(-1) for item in input_tensor_list])
    flat_output = zeros_tensor(sum(receives), flat_input.dtype)
    all_to_all_single(flat_output, flat_input, output_split_sizes=receives, input_split_sizes=sends, group=group)
    start = 0
    for target, size in zip(output_tensor_list, receives):
        target.copy_(flat_output[start:start + size].reshape(tuple(target.shape)).to(target.dtype))
        start += size
    return _done(async_op)


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Gather a picklable object from every rank of ``group`` into ``object_list`` (``all_gather_object``).

    MSAdapter's version gathers the sizes into views of one tensor (``object_sizes_tensor[i]``), which a
    collective does not write through on the CPU ("Memcpy failed"); megatron's dist_checkpointing
    gathers its metadata this way. Here every buffer owns its memory.
    """
    import pickle

    import numpy as np
    import torch

    world = torch.distributed.get_world_size(group)
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    size = torch.tensor([payload.size], dtype=torch.int64)
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    torch.distributed.all_gather(sizes, size, group=group)
    lengths = [int(item.numpy()[0]) for item in sizes]
    padded = np.zeros(max(lengths), dtype=np.int32)
    padded[:payload.size] = payload
    parts = [torch.zeros(max(lengths), dtype=torch.int32) for _ in range(world)]
    torch.distributed.all_gather(parts, torch.tensor(padded), group=group)
    for index, (part, length) in enumerate(zip(parts, lengths)):
        object_list[index] = pickle.loads(part.numpy()[:length].astype(np.uint8).tobytes())


def _group_rank(group: Any, global_rank: int) -> int:
    import torch

    if group is None:
        return global_rank
    return int(torch.distributed.get_group_rank(group, global_rank))


def _peer_group_rank(group: Any, global_rank: int | None, group_rank: int | None) -> int:
    if group_rank is not None:
        return group_rank
    return _group_rank(group, 0 if global_rank is None else global_rank)


def gather_object(obj: Any, object_gather_list: list[Any] | None = None, dst: int | None = None, group: Any = None,
                  group_dst: int | None = None) -> None:
    """Gather a picklable object from every rank onto ``dst`` (``gather_object``, same CPU gap as above).

    ``dst`` is a global rank, ``group_dst`` a rank within ``group`` (one of them, as in PyTorch; 0 if neither).
    """
    import torch

    gathered: list[Any] = [None] * torch.distributed.get_world_size(group)
    all_gather_object(gathered, obj, group=group)
    if torch.distributed.get_rank(group) == _peer_group_rank(group, dst, group_dst):
        if object_gather_list is None:
            raise ValueError("gather_object: the destination rank must pass object_gather_list")
        object_gather_list[:len(gathered)] = gathered


def broadcast_object_list(object_list: list[Any], src: int | None = None, group: Any = None, device: Any = None,
                          group_src: int | None = None) -> None:
    """Give every rank ``src``'s ``object_list`` (``broadcast_object_list``, same CPU gap as above).

    ``src`` is a global rank, ``group_src`` a rank within ``group`` (one of them, as in PyTorch; 0 if neither).
    """
    del device
    import torch

    source = _peer_group_rank(group, src, group_src)
    gathered: list[Any] = [None] * torch.distributed.get_world_size(group)
    mine = list(object_list) if torch.distributed.get_rank(group) == source else None
    all_gather_object(gathered, mine, group=group)
    object_list[:] = gathered[source]


def all_gather_wrapper(all_gather: Any) -> Any:
    """Let the list ``all_gather`` fill views and tensors of different sizes (wrap of MSAdapter's).

    On the CPU the gathered data does not reach output tensors that are views (megatron splits one
    output tensor into a list of views), and tensors of unequal sizes fail in the ring all-gather
    ("Memcpy error ... dest size ... src size"; megatron's unequal-split gather of the MoE dispatcher
    with tensor and expert parallelism). Every rank's tensor travels flattened and padded to the
    largest in owned buffers, and is copied into the caller's tensors.
    """
    import functools

    @functools.wraps(all_gather)
    def all_gather_(tensor_list: list[Any], tensor: Any, group: Any = None, async_op: bool = False) -> Any:

        sizes = [int(item.numel()) for item in tensor_list]
        longest = max(sizes + [int(tensor.numel()), 1])
        flat = owned_copy(_padded(tensor.reshape(-1), longest))
        parts = [zeros_tensor(tuple(flat.shape), flat.dtype) for _ in tensor_list]
        all_gather(parts, flat, group, False)
        for target, part, size in zip(tensor_list, parts, sizes):
            target.copy_(part[:size].reshape(tuple(target.shape)).to(target.dtype))
        return _done(async_op)

    return all_gather_


def _reduce_op(op: Any) -> Any:
    import torch

    if op is None or (isinstance(op, str) and op.lower() == "sum"):
        return torch.distributed.ReduceOp.SUM
    return op


def reduce_scatter(output: Any, input_list: list[Any], op: Any = None, group: Any = None,
                   async_op: bool = False) -> CompletedWork | None:
    """Reduce ``input_list[i]`` over ``group`` into rank ``i``'s ``output`` (the list ``reduce_scatter``).

    No CPU kernel; megatron's unequal-split reduce-scatter (the MoE dispatcher with tensor and expert
    parallelism) calls it. Every rank holds blocks of the same shapes, so the blocks travel
    concatenated through one all-reduce and each rank keeps its own.
    """
    import torch

    rank = torch.distributed.get_rank(group)
    sizes = [int(item.numel()) for item in input_list]
    flat = owned_copy(torch.cat([item.reshape(-1) for item in input_list]))
    torch.distributed.all_reduce(flat, op=_reduce_op(op), group=group)
    start = sum(sizes[:rank])
    output.copy_(flat[start:start + sizes[rank]].reshape(tuple(output.shape)).to(output.dtype))
    return _done(async_op)


def into_caller_wrapper(collective: Any) -> Any:
    """Make a collective that writes into its ``tensor`` argument reach it when that tensor is a view.

    On MindSpore's CPU backend ``broadcast`` (and ``all_reduce``, ``recv``) into a view (any slice,
    ``view``, even ``t[:]``) return normally and leave the view and its base unchanged, so gradients
    reduced bucket by bucket (megatron's and MindSpeed's ``start_grad_sync`` reduce views of one grad
    buffer) silently stay each rank's own; on bool tensors they fail ("Broadcast failed."). The
    collective runs on a copy that owns its memory, in its wire dtype (:func:`wire_dtype`), and the
    result is copied into the caller's tensor, which writes through a view
    (:mod:`mindspeed_ms.compat.inplace`). Collectives are not recorded by autograd (as in PyTorch), so
    the copy back is not either. An async call is waited for here and returns a finished handle.
    """
    import functools

    @functools.wraps(collective)
    def collective_(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if not hasattr(tensor, "asnumpy"):  # not a MindSpore tensor: nothing to fix
            return collective(tensor, *args, **kwargs)
        import torch

        if collective.__name__ == "broadcast":
            alone, async_op = _one_rank_source(args, kwargs)
            if alone:  # a group of this rank alone, its own source: the tensor is the result
                return CompletedWork() if async_op else None
        owned = owned_copy(tensor)
        result = collective(owned, *args, **kwargs)
        waited = hasattr(result, "wait")
        if waited:
            result.wait()
        with torch.no_grad():
            tensor.copy_(owned.to(tensor.dtype))
        return CompletedWork() if waited else result

    return collective_


def group_named(name: Any, op: str) -> Any:
    """The MSAdapter process group named ``name`` (``group._name``: what MSAdapter's ``P2POp`` and MindSpeed's MindSpore
    code hand over instead of the group); ``name`` itself when it is not a string (a group, or ``None``).

    Raises:
        CollectiveError: no process group has that name (a ``RuntimeError``), naming ``op``.
    """
    if name is None or not isinstance(name, str):
        return name
    from msadapter.distributed import distributed_c10d

    for group in distributed_c10d._world.pg_names:
        if getattr(group, "_name", None) == name:
            return group
    raise CollectiveError(op, f"no process group is named {name!r}",
                          "create the group with torch.distributed.new_group")


def mint_all_to_all_single(output: Any, input: Any, output_split_sizes: Any = None,  # noqa: A002  (MindSpore's name)
                           input_split_sizes: Any = None, group: Any = None, async_op: bool = False) -> Any:
    """``mindspore.mint.distributed.all_to_all_single`` on the CPU backend (DistCommAllToAllVSingle has no CPU kernel):
    MindSpeed's MindSpore all-to-all (``mindspeed.mindspore.core.tensor_parallel.mappings.all_to_all_forward``, the
    MoE alltoall dispatchers' token exchange) calls it with the group's name; :func:`all_to_all_single` on that
    group, the same blocks received into ``output``."""
    return all_to_all_single(output, input, output_split_sizes, input_split_sizes,
                             group=group_named(group, "mindspore.mint.distributed.all_to_all_single"),
                             async_op=async_op)
