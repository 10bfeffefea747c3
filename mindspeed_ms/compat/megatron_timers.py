"""megatron-core's timer report on MindSpore's CPU backend: the per-timer tensor operations read on the host.

Every ``--log-interval`` iterations megatron's ``training_log`` calls ``Timers.log``, which gathers each timer's
elapsed time into a ``[world_size, timers]`` float32 tensor and then, for each timer, takes its column, compares
it with 0, keeps the positive entries with a boolean index, and reads their minimum and maximum with ``.item()``
(``Timers._get_global_min_max_time``; ``_get_all_ranks_time_string`` compares and divides element by element).
Writing the times in is one index assignment per timer. On PyTorch's CPU each of those operations costs a few
microseconds; on MindSpore's CPU backend each is a kernel launch (a boolean index is several, and a
shape that depends on the values) of ~100-250 us: with megatron's ~15 timers and ``--log-interval 1``
Megatron-LM's ``pretrain_gpt.py`` spent ~19% of its loop (~15 ms an iteration) in ``training_log``, nearly all
of it there.

Here the times of this rank are written into a NumPy array whose memory the gathered tensor shares
(``torch.from_numpy``), gathered by the same collective (megatron's ``dist_all_gather_func``; over a group of one
rank, :func:`.cpu_collectives.all_gather_into_tensor` finds its input already in place), and the report reads the
gathered tensor once into NumPy: the same
float32 values (a Python float stored as float32, as the index assignment stores it), the same filter (``> 0.0``),
the same minimum and maximum read as Python floats and divided by the same normalizer, so the same report, bit for
bit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["get_all_ranks_time_string", "get_elapsed_time_all_ranks", "get_global_min_max_time"]


def _host_times(timers: Any, names: Iterable[str], reset: bool, barrier: bool) -> Any:
    """The gathered ``[world_size, len(names)]`` float32 times (what :func:`get_elapsed_time_all_ranks` returns)
    read once into NumPy after its collective."""
    return get_elapsed_time_all_ranks(timers, names, reset, barrier).numpy()


def get_elapsed_time_all_ranks(self: Any, names: Iterable[str], reset: bool, barrier: bool) -> Any:
    """``Timers._get_elapsed_time_all_ranks``: the elapsed times of ``names`` on every rank, ``[world_size,
    len(names)]`` float32 (0 for a name this rank has no timer of), this rank's row written on the host."""
    import numpy as np
    import torch
    from megatron.core import timers as megatron_timers

    names = list(names)
    if barrier:
        torch.distributed.barrier()
    world_size = torch.distributed.get_world_size()
    rank = torch.distributed.get_rank()
    times = np.zeros((world_size, len(names)), np.float32)
    for i, name in enumerate(names):
        if name in self._timers:
            times[rank, i] = self._timers[name].elapsed(reset=reset)  # a Python float stored as float32, as megatron's
    gathered = torch.from_numpy(times)  # the array's memory: no fill and no index-assignment kernels
    megatron_timers.dist_all_gather_func(gathered.view(-1), gathered[rank, :].view(-1))
    return gathered


def get_global_min_max_time(self: Any, names: Iterable[str], reset: bool, barrier: bool,
                            normalizer: float) -> dict[str, tuple[float, float]]:
    """``Timers._get_global_min_max_time``: for each of ``names`` with a positive time on some rank, the smallest
    and largest positive time over the ranks divided by ``normalizer``."""
    names = list(names)
    times = _host_times(self, names, reset, barrier)
    result = {}
    for i, name in enumerate(names):
        column = times[:, i]
        column = column[column > 0.0]
        if column.size > 0:
            result[name] = (float(column.min()) / normalizer, float(column.max()) / normalizer)
    return result


def get_all_ranks_time_string(self: Any, names: Iterable[str], reset: bool, barrier: bool,
                              normalizer: float) -> str | None:
    """``Timers._get_all_ranks_time_string``: each rank's positive time of each of ``names``, megatron's text (its
    0-d float32 tensor divided by the normalizer: a float32 division)."""
    import numpy as np

    names = list(names)
    scale = np.float32(normalizer)
    times = _host_times(self, names, reset, barrier)
    output_string = 'times across ranks (ms):'
    reported = False
    for i, name in enumerate(names):
        found = False
        for rank, value in enumerate(times[:, i]):
            if value > 0:
                reported = True
                if not found:
                    found = True
                    output_string += f'\n  {name}:'
                output_string += f'\n     rank {rank:2d}: {value / scale:.2f}'
    return output_string if reported else None
