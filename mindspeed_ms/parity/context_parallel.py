"""A context-parallel candidate against a reference without context parallelism (parity).

With context parallelism ``cp`` (Megatron's and MindSpeed's ring attention, ``megatron_cp_algo``) each candidate rank
holds a slice of every sequence: the sequence is cut into ``2 * cp`` equal chunks and CP rank ``r`` keeps chunks ``r``
and ``2 * cp - 1 - r`` (the load-balanced causal layout of ``get_batch_on_this_cp_rank``). Candidate rank ``k`` is CP
rank ``k % cp`` of data-parallel rank ``k // cp`` (tensor and pipeline parallel size 1), which is reference rank
``k // cp``. Its batches and module outputs are the reference's, sliced so; its loss, all-reduced over the CP group
before the backward and scaled by ``cp`` (megatron's ``forward_step``), is ``cp`` times the reference's; its
gradients are partial, and their mean over the CP group (what megatron's DDP reduction gives) is the reference's.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["PARITY_CP_ENV", "context_parallel_size", "cp_slice", "cp_mean_gradients"]

#: the candidate's context-parallel size (set by :func:`mindspeed_ms.parity.run_parity`); 1 when unset
PARITY_CP_ENV = "MINDSPEED_MS_PARITY_CP"


def context_parallel_size(environ: Any = None) -> int:
    """Return ``MINDSPEED_MS_PARITY_CP`` as a positive int (1 when unset).

    Raises:
        ValueError: it is set to something else than a positive integer.
    """
    env = os.environ if environ is None else environ
    text = env.get(PARITY_CP_ENV, "1") or "1"
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{PARITY_CP_ENV}={text!r}: expected a positive integer (the candidate's CP size)")
    return int(text)


def cp_slice(reference: np.ndarray, shape: tuple[int, ...], cp: int, cp_rank: int) -> np.ndarray | None:
    """Return CP rank ``cp_rank``'s slice of ``reference`` with ``shape``, or None when no axis fits.

    The sequence axis is the one axis whose length is ``cp`` times the candidate's; ``reference`` is cut into
    ``2 * cp`` chunks along it and chunks ``cp_rank`` and ``2 * cp - 1 - cp_rank`` are joined.
    """
    if cp < 2 or len(shape) != reference.ndim:
        return None
    differing = [axis for axis, (full, part) in enumerate(zip(reference.shape, shape)) if full != part]
    if len(differing) != 1:
        return None
    axis = differing[0]
    full, part = reference.shape[axis], shape[axis]
    if full != cp * part or full % (2 * cp):
        return None
    chunks = np.split(reference, 2 * cp, axis=axis)
    return np.concatenate([chunks[cp_rank], chunks[2 * cp - 1 - cp_rank]], axis=axis)


def cp_mean_gradients(grads: dict[str, np.ndarray], torch: Any) -> dict[str, np.ndarray]:
    """Return the mean of ``grads`` over this rank's context-parallel group (one all-reduce; every CP rank calls it
    at the same step)."""
    from megatron.core import parallel_state

    group = parallel_state.get_context_parallel_group()
    size = parallel_state.get_context_parallel_world_size()
    names = sorted(grads)
    if not names:
        return {}
    flat = np.concatenate([grads[name].astype(np.float32).ravel() for name in names])
    total = torch.tensor(flat)
    torch.distributed.all_reduce(total, group=group)
    mean = np.array(total.numpy(), dtype=np.float32, copy=True) / size
    out, start = {}, 0
    for name in names:
        count = grads[name].size
        out[name] = mean[start:start + count].reshape(grads[name].shape)
        start += count
    return out
