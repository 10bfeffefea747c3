"""Adam/AdamW over a whole DDP bucket at once, in place in host memory: PyTorch's rule without a kernel.

When every parameter of a DDP bucket (megatron's ``_ParamAndGradBucket``; the parameters name it, see
:func:`mindspeed_ms.compat.megatron_speed.remember_buckets`) is in the optimizer, has its ``main_grad``
view of the bucket as gradient (megatron's ``FP32Optimizer`` sets ``param.grad = param.main_grad``), the
bucket holds nothing else (float32), and all its parameters are at the same step, the update of
:mod:`mindspeed_ms.compat.optim` runs once over the bucket on MindSpore's CPU backend: the gradient is
the bucket's ``grad_data`` (no copy), the first and second moments are flat tensors of the bucket's
size, and the update runs in NumPy over their host memory and each parameter's, in chunks that stay in
cache, in place: no temporary of the bucket's size, no write-back. The operations are the per-parameter
update's float32 operations in the same order with the same float32 scalars, so every element gets the
same bits (MindSpore's CPU kernels and NumPy both round IEEE operations and keep subnormals).

Why not kernels: each MindSpore kernel over the bucket is a memory pass that allocates its result, and
``mint.lerp`` is ~20x slower than a multiplication on this backend (126 ms vs 6.5 ms over 6.4M floats);
the mid-size model's Adam took ~360 ms per step that way (PyTorch: ~22 ms).

The per-parameter state stays PyTorch's: ``state[p]["exp_avg"]``/``["exp_avg_sq"]`` (and
``max_exp_avg_sq``) are views of the flat moments (updated in place, so they always read the current
values: ``state_dict()`` sees them), ``state[p]["step"]`` is the parameter's own scalar tensor. When a
state tensor is no longer the view handed out (``load_state_dict``, a user's assignment), the flat
moments are rebuilt from the per-parameter state first: the per-parameter layout stays authoritative.

Everything else (the distributed optimizer's shards, parameters outside DDP, a bucket shared with
another optimizer, L2 weight decay with ``decoupled_weight_decay=False``) takes the per-parameter path.
"""

from __future__ import annotations

import collections
import ctypes
import itertools
import math
import operator
from dataclasses import dataclass
from typing import Any

from mindspeed_ms.compat import host_kernels
from mindspeed_ms.compat.host_memory import host_array, host_memory_reason, synchronize, tensor_reads
from mindspeed_ms.compat.megatron_speed import BUCKET_ATTRIBUTE

__all__ = ["step_buckets"]

#: The optimizer attribute holding the flat state of each bucket it updates.
_CACHE = "_mindspeed_ms_flat_adam"
#: The optimizer attribute holding each bucket's checked layout.
_LAYOUTS = "_mindspeed_ms_flat_adam_layouts"

#: MindSpore's own attributes behind ``param.grad`` (of a leaf), ``dtype`` and the shape: read for every
#: parameter of a bucket every step, so without the Python properties in front of them
_GRAD, _DTYPE, _SHAPE = operator.attrgetter("_grad"), operator.attrgetter("_dtype"), operator.attrgetter("_shape")
#: a state's moments and step counter, read with ``get`` (C calls over a bucket's states, no Python frame each)
_EXP_AVG, _EXP_AVG_SQ, _MAX_EXP_AVG_SQ, _STEP = (operator.methodcaller("get", key) for key in (
    "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"))
#: a ctypes float's value; the group of a (parameter, group) pair and its parameter
_VALUE, _GROUP, _PARAM = operator.attrgetter("value"), operator.itemgetter(1), operator.itemgetter(0)


@dataclass
class _FlatState:
    """The flat moments of one bucket and the per-parameter views handed out as state."""

    first: Any
    second: Any
    maximum: Any
    views: list[tuple[Any, Any, Any]]  # per parameter in buffer order: (exp_avg, exp_avg_sq, max_exp_avg_sq)
    scratch: tuple[Any, Any] | None = None  # two NumPy float32 work arrays of a chunk's size


@dataclass
class _Layout:
    """A bucket's parameters in buffer order and their host memory, kept while none of it moved.

    Checked every step with MindSpore's own attribute reads (no Python frame per parameter): the same
    parameters, each gradient where it lay (MSAdapter returns a new gradient object on every read, so
    identity cannot tell), each parameter's memory, dtype and shape where and what they were.
    """

    params: list[Any]  # ``params_list`` as it was
    grad_data: Any
    grad_addresses: list[int]  # each parameter's gradient address, in ``params_list`` order
    order: list[Any]  # the parameters in buffer order
    addresses: list[int]  # each parameter's own address, buffer order
    dtypes: list[Any]
    shapes: list[Any]
    values: list[Any]  # each parameter's flat host array, buffer order
    offsets: list[int]  # each parameter's start in the bucket, buffer order
    steps: list[Any] | None = None  # each parameter's ``state["step"]`` as last seen, buffer order
    cells: list[Any] | None = None  # a ctypes float over each of them (None: not a 0-d float32 tensor)
    all_cells: bool = False  # every one of ``cells`` is a ctypes float
    chunks: tuple[tuple[Any, ...], list[tuple[Any, ...]]] | None = None  # (the arrays, :func:`_chunks` of them)


def _placed(bucket: Any) -> list[Any] | None:
    """Return the bucket's parameters in buffer order, or None when it is not flat-updatable."""
    params = bucket.params_list
    grad_data = bucket.grad_data
    if not params or str(grad_data.dtype).rsplit(".", 1)[-1] != "Float32":
        return None  # the host update computes in float32 (bf16/fp16 main params live elsewhere in megatron)
    base = grad_data.data_ptr()
    itemsize = grad_data.itemsize
    placed = []
    for param in params:
        grad, main_grad = param.grad, getattr(param, "main_grad", None)
        if grad is None or main_grad is None or grad.data_ptr() != main_grad.data_ptr():
            return None
        if (grad.dtype != grad_data.dtype or param.dtype != grad_data.dtype or param.is_complex()
                or not param.is_contiguous()):
            return None
        placed.append(((grad.data_ptr() - base) // itemsize, param))
    placed.sort(key=lambda item: item[0])
    offset = 0
    for start, param in placed:
        if start != offset:
            return None
        offset += int(param.numel())
    if offset != int(grad_data.numel()):
        return None
    return [param for _, param in placed]


def _grad_addresses(params: list[Any]) -> list[int] | None:
    """Each parameter's gradient address, or None when one has no gradient."""
    try:
        return list(map(tensor_reads()[0], map(_GRAD, params)))
    except TypeError:  # a gradient is None (MindSpore's reader takes tensors only)
        return None


def _layout(bucket: Any) -> _Layout | None:
    """Check the bucket's layout (:func:`_placed`) and take its parameters' host memory."""
    order = _placed(bucket)
    grad_addresses = _grad_addresses(bucket.params_list)
    if order is None or grad_addresses is None:
        return None
    values = [host_array(param, sync=False, flat=True) for param in order]
    offsets = list(itertools.accumulate((array.size for array in values[:-1]), initial=0))
    return _Layout(list(bucket.params_list), bucket.grad_data, grad_addresses, order,
                   list(map(tensor_reads()[0], order)), list(map(_DTYPE, order)), list(map(_SHAPE, order)), values,
                   offsets)


def _unchanged(layout: _Layout, bucket: Any) -> bool:
    params = bucket.params_list
    return (layout.grad_data is bucket.grad_data and len(layout.params) == len(params)
            and all(map(operator.is_, params, layout.params)) and _grad_addresses(params) == layout.grad_addresses
            and list(map(tensor_reads()[0], layout.order)) == layout.addresses
            and all(map(operator.is_, map(_DTYPE, layout.order), layout.dtypes))
            and list(map(_SHAPE, layout.order)) == layout.shapes)


def _ordered(optimizer: Any, bucket: Any, members: dict[int, tuple[Any, dict[str, Any]]]
             ) -> tuple[_Layout, list[tuple[Any, dict[str, Any]]]] | None:
    """Return the bucket's layout and its (parameter, group) pairs in buffer order, or None when it is not
    flat-updatable.

    The layout is checked once and kept while the bucket holds the same parameters whose gradients lie
    where they lay then and whose own memory did not move (megatron hands each parameter its ``main_grad``
    view every step; the gradient object MSAdapter returns may differ from read to read, its memory does not).
    """
    layouts = optimizer.__dict__.setdefault(_LAYOUTS, {})
    layout = layouts.get(id(bucket))
    if layout is None or not _unchanged(layout, bucket):
        layout = _layout(bucket)
        if layout is None:
            layouts.pop(id(bucket), None)
            return None
        layouts[id(bucket)] = layout
    pairs = list(map(members.get, map(id, layout.order)))
    if any(map(operator.is_, pairs, itertools.repeat(None))):
        return None
    return layout, pairs  # type: ignore[return-value]  # no None left


def _same(groups: list[dict[str, Any]], key: str) -> bool:
    first = groups[0].get(key)
    for group in groups:  # a loop, not a generator expression: a frame fewer each step
        if not group.get(key) == first:
            return False
    return True


def _still_ours(views: list[tuple[Any, Any, Any]], states: list[dict[str, Any]], amsgrad: bool) -> bool:
    """Whether every state still holds our views of the flat moments (``is`` over C-level reads)."""
    firsts, seconds, maxima = zip(*views) if views else ((), (), ())
    return (all(map(operator.is_, map(_EXP_AVG, states), firsts))
            and all(map(operator.is_, map(_EXP_AVG_SQ, states), seconds))
            and (not amsgrad or all(map(operator.is_, map(_MAX_EXP_AVG_SQ, states), maxima))))


def _flat_state(optimizer: Any, bucket: Any, pairs: list[tuple[Any, dict[str, Any]]], states: list[dict[str, Any]],
                amsgrad: bool) -> _FlatState:
    """Return the bucket's flat moments, rebuilt from the per-parameter state unless that still is our views."""
    import mindspore.mint as mint
    import mindspore.ops as ops

    cache = optimizer.__dict__.setdefault(_CACHE, {})
    flat = cache.get(id(bucket))
    if flat is not None and len(flat.views) == len(pairs) and _still_ours(flat.views, states, amsgrad):
        return flat  # type: ignore[no-any-return]

    def gathered(key: str) -> Any:
        if all(state.get(key) is None for state in states):
            return ops.zeros(int(bucket.grad_data.numel()), bucket.grad_data.dtype)
        parts = [state[key] if state.get(key) is not None else ops.zeros_like(param)
                 for state, (param, _) in zip(states, pairs)]
        return mint.cat([part.reshape(-1) for part in parts])

    first, second = gathered("exp_avg"), gathered("exp_avg_sq")
    maximum = gathered("max_exp_avg_sq") if amsgrad else None
    views = []
    offset = 0
    for state, (param, _) in zip(states, pairs):
        end = offset + int(param.numel())
        shape = tuple(param.shape)
        triple = (first[offset:end].view(shape), second[offset:end].view(shape),
                  maximum[offset:end].view(shape) if maximum is not None else None)
        state["exp_avg"], state["exp_avg_sq"] = triple[0], triple[1]
        if maximum is not None:
            state["max_exp_avg_sq"] = triple[2]
        views.append(triple)
        offset = end
    flat = _FlatState(first, second, maximum, views)
    cache[id(bucket)] = flat
    return flat


def _step_cell(step: Any) -> Any:
    """A ctypes float over a 0-d float32 CPU tensor's memory (the step counter), or None for other kinds."""
    import mindspore

    if getattr(step, "dtype", None) == mindspore.float32 and getattr(step, "_shape", None) == ():
        return ctypes.c_float.from_address(int(step.data_ptr()))
    return None


def _count(layout: _Layout, states: list[dict[str, Any]]) -> int | None:
    """The step count all the bucket's parameters share (0: no state yet), or None when they differ.

    The counters are read from host memory (call :func:`synchronize` first), through ctypes floats kept in
    ``layout`` while each parameter's ``state["step"]`` stays the same tensor (its memory does not move).
    """
    steps = list(map(_STEP, states))
    cells = layout.cells
    if cells is None or layout.steps is None or not all(map(operator.is_, steps, layout.steps)):
        cells = [_step_cell(step) for step in steps]
        layout.steps, layout.cells = steps, cells
        layout.all_cells = None not in cells
    if layout.all_cells:  # the common case: every counter a float32 cell, read in one C-level pass
        counts = set(map(_VALUE, cells))
        return int(counts.pop()) if len(counts) == 1 else None
    counts = {int(cell.value) if cell is not None else _number(step) for step, cell in zip(steps, cells)}
    return counts.pop() if len(counts) == 1 else None


def _number(step: Any) -> int:
    if step is None or isinstance(step, (int, float)):
        return int(step or 0)
    return int(step.item())


#: Elements per NumPy pass: the ~13 passes of one chunk stay in cache, the Python loop stays short.
_CHUNK = 1 << 15


def _scratch(flat: _FlatState, size: int) -> tuple[Any, Any]:
    import numpy as np

    if flat.scratch is None or flat.scratch[0].size < size:
        flat.scratch = (np.empty(size, np.float32), np.empty(size, np.float32))
    return flat.scratch


def _chunks(layout: _Layout, grads: Any, firsts: Any, seconds: Any, maxima: Any, work: Any, update: Any
            ) -> list[tuple[Any, ...]]:
    """The bucket in chunks of :data:`_CHUNK` elements, across parameters (a small model's many small tensors
    cost few NumPy calls; the ~13 passes of a chunk stay in cache): for each chunk, its slices of the gradient,
    moments and work memory, and the parts of the parameters in it as (first moment, denominator, update work,
    parameter memory, the parameter's index in buffer order). Kept in ``layout`` while the arrays are the same.
    """
    chunks = []
    index = 0
    for start in range(0, grads.size, _CHUNK):
        stop = min(start + _CHUNK, grads.size)
        first, tmp, upd = firsts[start:stop], work[:stop - start], update[:stop - start]
        parts = []
        while index < len(layout.values):
            begin, values = layout.offsets[index], layout.values[index]
            low, high = max(begin, start), min(begin + values.size, stop)
            parts.append((first[low - start:high - start], tmp[low - start:high - start],
                          upd[low - start:high - start], values[low - begin:high - begin], index))
            if begin + values.size > stop:
                break  # the parameter goes on in the next chunk
            index += 1
        chunks.append((grads[start:stop], first, seconds[start:stop],
                       maxima[start:stop] if maxima is not None else None, tmp, upd, parts))
    return chunks


def _update(optimizer: Any, bucket: Any, layout: _Layout, pairs: list[tuple[Any, dict[str, Any]]],
            is_decoupled: bool) -> bool:
    import numpy as np

    in_order = list(map(_GROUP, pairs))
    groups = list(dict(zip(map(id, in_order), in_order)).values())  # each group once (C-level passes)
    if not all(_same(groups, key) for key in ("betas", "eps", "amsgrad", "maximize")):
        return False
    if any(group["weight_decay"] != 0 and not (is_decoupled or bool(group.get("decoupled_weight_decay", False)))
           for group in groups):
        return False  # L2 decay: the per-parameter path
    if any(group.get("differentiable") for group in groups):
        return False  # the per-parameter path raises the typed error
    synchronize()  # the counters are read from host memory
    states = list(map(optimizer.state.__getitem__, map(_PARAM, pairs)))  # a defaultdict: as state[param]
    count = _count(layout, states)
    if count is None:
        return False
    count += 1
    beta1, beta2 = (float(beta) for beta in groups[0]["betas"])
    eps, amsgrad, maximize = groups[0]["eps"], groups[0]["amsgrad"], groups[0]["maximize"]
    flat = _flat_state(optimizer, bucket, pairs, states, amsgrad)
    dtype = np.float32
    # The per-parameter update's float32 operations, one after the other, in the same order and with the same
    # scalars (Python floats rounded to float32): each element gets the same bits.
    scalars = (dtype(1 - beta1), dtype(beta2), dtype(1 - beta2), dtype(math.sqrt(1 - beta2 ** count)), dtype(eps))
    synchronize()
    grads = host_array(bucket.grad_data, sync=False, flat=True)
    firsts = host_array(flat.first, sync=False, flat=True)
    seconds = host_array(flat.second, sync=False, flat=True)
    maxima = host_array(flat.maximum, sync=False, flat=True) if amsgrad else None
    work, update = _scratch(flat, min(_CHUNK, grads.size))
    # Each parameter's group's step size and decay factor (the learning rate may change every step).
    factors = {}
    for group in groups:
        lr = float(group["lr"])
        decay = dtype(1 - lr * group["weight_decay"]) if group["weight_decay"] != 0 else None
        factors[id(group)] = (dtype(-lr / (1 - beta1 ** count)), decay)
    per_param = list(map(factors.__getitem__, map(id, in_order)))
    if host_kernels.adam_bucket(grads, firsts, seconds, maxima, work, update, maximize, scalars, layout.values,
                                layout.offsets, per_param, _CHUNK):
        _set_steps(layout, states, count)  # the loop below in one C call (~400 calls a step at the mid size)
        return True
    arrays = (grads, firsts, seconds, maxima, work, update)
    if layout.chunks is None or not all(map(operator.is_, layout.chunks[0], arrays)):
        layout.chunks = (arrays, _chunks(layout, *arrays))
    for grad, first, second, maximum, tmp, upd, parts in layout.chunks[1]:
        host_kernels.adam_moments(grad, first, second, maximum, tmp, upd if maximize else None, scalars)
        for first_part, tmp_part, upd_part, values_part, index in parts:
            step_size, decay = per_param[index]
            host_kernels.adam_apply(first_part, tmp_part, step_size, upd_part, values_part, decay)
    _set_steps(layout, states, count)
    return True


def _set_steps(layout: _Layout, states: list[dict[str, Any]], count: int) -> None:
    """Make each ``state["step"]`` hold ``count``: in place in the parameter's own step tensor, as PyTorch's
    ``+= 1`` (aliases of the state see it), or a new float32 tensor where there was none."""
    import mindspore

    assert layout.cells is not None  # set by _count
    if layout.all_cells:  # every counter a float32 cell: written in one C-level pass (no frame per parameter)
        collections.deque(map(setattr, layout.cells, itertools.repeat("value"), itertools.repeat(count)), maxlen=0)
        return
    for state, cell in zip(states, layout.cells):
        if cell is not None:
            cell.value = count
        else:
            state["step"] = mindspore.tensor(float(count), dtype=mindspore.float32)


def step_buckets(optimizer: Any, is_decoupled: bool) -> set[int]:
    """Update every DDP bucket whose parameters all belong to ``optimizer`` in one pass each.

    Args:
        optimizer: MSAdapter's ``torch.optim.Adam``/``AdamW`` (patched by :mod:`mindspeed_ms.compat.optim`).
        is_decoupled: the optimizer is AdamW (decoupled weight decay in every group).

    Returns:
        The ``id`` of every parameter updated here; the caller updates the others one by one.
    """
    if host_memory_reason() is not None:
        return set()  # the update runs in host memory (MindSpore's CPU backend)
    members: dict[int, tuple[Any, dict[str, Any]]] = {}
    buckets: dict[int, Any] = {}
    for group in optimizer.param_groups:  # C-level passes over each group's parameters (no frame per parameter)
        params = group["params"]
        members.update(zip(map(id, params), zip(params, itertools.repeat(group))))
        owners = list(map(getattr, params, itertools.repeat(BUCKET_ATTRIBUTE), itertools.repeat(None)))
        buckets.update(zip(map(id, owners), owners))  # in order of first appearance, as one by one
    buckets.pop(id(None), None)  # parameters of no bucket
    done: set[int] = set()
    for bucket in buckets.values():
        placed = _ordered(optimizer, bucket, members)
        if placed is not None and _update(optimizer, bucket, *placed, is_decoupled):
            done.update(map(id, placed[0].order))
    return done
