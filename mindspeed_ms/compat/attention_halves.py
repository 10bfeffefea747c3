"""The batch's halves of megatron's core attention on two threads (:mod:`.host_attention`'s forward and backward).

Each half runs :func:`~.host_arithmetic.attention_forward` / ``attention_backward`` over its sequences: every head's
products and softmax rows are the same operations on the same values as on one thread, so the same bits. Whether
two threads run is decided once per process (:func:`two_threads`) and per shape (:data:`MIN_THREAD_PRODUCT`); the
backward follows its forward's split.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat import blas_threads
from mindspeed_ms.compat.host_arithmetic import attention_backward, attention_forward

__all__ = ["MIN_THREAD_PRODUCT", "backward_in_halves", "forward_in_halves", "run_both", "two_threads"]

#: the scores' product (``q @ k^T`` over the batch: ``sq * sk * b * np * hn`` multiply-adds) from which the batch's
#: halves run on two threads (:func:`forward_in_halves`); below it the whole batch runs on the calling thread. A
#: thread started and joined per call costs ~0.1-0.2 ms on a quiet machine and 10-20 ms on the loaded 2-core one
#: (cProfile at the tiny size: ``start_new_thread`` 66 ms a step for 4 calls), more than the tiny size's whole
#: attention (262,144 multiply-adds: tens of microseconds); the mid size's (33.5 million) gains from the halves.
#: The host GEMM's bar for its second OpenBLAS thread until round 24 (:data:`.blas_threads.ONE_THREAD_PRODUCT` is
#: 2**25 since). A shape's property, the same for the forward and its backward (which follows the forward's split).
MIN_THREAD_PRODUCT = 1 << 23


def forward_in_halves(query: Any, key: Any, value: Any, mask: Any, alpha: float, out: Any) -> tuple[Any, ...]:
    """:func:`~.host_arithmetic.attention_forward` of each half of the batch (the second on a thread of this call,
    :func:`run_both`, where :func:`two_threads` and the products are large enough: :data:`MIN_THREAD_PRODUCT`), or
    of the whole batch; returns the probabilities of each part."""
    parts = _parts(query.shape[1], query.shape[0] * key.shape[0] * query.shape[1] * query.shape[2] * query.shape[3])
    if len(parts) == 1:
        return (attention_forward(query, key, value, mask, alpha, out),)
    return run_both(*(functools.partial(attention_forward, query[:, part], key[:, part], value[:, part],
                                     _mask_part(mask, part, query.shape[1]), alpha, out[:, part])
                   for part in parts))


def backward_in_halves(grad: Any, inputs: tuple[Any, Any, Any], probs: tuple[Any, ...], mask: Any, alpha: float,
                        grad_query: Any, grad_key: Any, grad_value: Any) -> None:
    """:func:`~.host_arithmetic.attention_backward` of the parts :func:`forward_in_halves` computed."""
    batch = grad.shape[1]
    if len(probs) == 1:
        attention_backward(grad, inputs, probs[0], mask, alpha, grad_query, grad_key, grad_value)
        return
    # the forward's split (len(probs)), never a new decision
    run_both(*(functools.partial(attention_backward, grad[:, part], tuple(array[:, part] for array in inputs),
                              part_probs, _mask_part(mask, part, batch), alpha, grad_query[:, part],
                              grad_key[:, part], grad_value[:, part])
            for part, part_probs in zip(_halves(batch), probs)))


def _parts(batch: int, product: int) -> tuple[slice, ...]:
    """The batch's halves where :func:`two_threads`, there are two sequences or more and the scores' product has
    ``product >= MIN_THREAD_PRODUCT`` multiply-adds (``sq * sk * b * np * hn``), else the whole."""
    if batch < 2 or product < MIN_THREAD_PRODUCT or not two_threads():
        return (slice(0, batch),)
    return _halves(batch)


def _halves(batch: int) -> tuple[slice, slice]:
    return slice(0, batch // 2), slice(batch // 2, batch)


def _mask_part(mask: Any, part: slice, batch: int) -> Any:
    """The part of ``mask`` (broadcasting to ``[batch, np, sq, sk]``) for the sequences ``part``."""
    return mask[part] if mask is not None and mask.ndim == 4 and mask.shape[0] == batch else mask


@functools.lru_cache(maxsize=1)
def two_threads() -> bool:
    """Whether the halves of the batch run on two threads: decided once per process, from what does not change
    while it runs: OpenBLAS's largest thread count (:mod:`.blas_threads`: ``OPENBLAS_NUM_THREADS`` where set, the
    process's CPUs in msrun's only worker, one in each of several msrun workers, as ``OMP_NUM_THREADS=1``) and the
    cores this process may run on (``os.sched_getaffinity``), both two or more. Each thread runs its products
    on one OpenBLAS thread (NumPy releases the GIL in its loops and products): every head's products and softmax
    rows are the same operations on the same values as on one thread, so the same bits.

    Not from the machine's load: a decision per call from the 1-minute load average (the previous gate) made the
    path depend on other processes, and a forward and its backward could decide differently. On a quiet machine
    the halves take about half the time (14.0 -> 6.4 ms a mid layer, forward and backward); on the loaded 2-core
    machine the forward's second thread waits for a core and the backward still gains (old31/attn2.md)."""
    threads = blas_threads.openblas_threads()
    return threads is not None and threads.largest >= 2 and _cores() >= 2


@functools.lru_cache(maxsize=1)
def _cores() -> int:
    return len(os.sched_getaffinity(0))


def run_both(first: Callable[[], Any], second: Callable[[], Any]) -> tuple[Any, Any]:
    """``(first(), second())``, ``second`` on a new thread that is joined before this returns (no thread of ours
    outlives the call: none is alive at the interpreter's or MindSpore's teardown, none holds an array then). The
    thread runs NumPy only, on arrays the caller keeps alive until the join; its exception is raised here."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append((True, second()))
        except BaseException as error:  # noqa: BLE001  # raised in the calling thread below
            result.append((False, error))

    thread = threading.Thread(target=run, name="mindspeed-ms-attention")
    try:
        thread.start()
    except RuntimeError:  # no thread to be had ("can't start new thread"): both here, one after the other
        return first(), second()
    try:
        mine = first()
    finally:
        thread.join()
    done, value = result[0]
    if not done:
        raise value
    return mine, value
