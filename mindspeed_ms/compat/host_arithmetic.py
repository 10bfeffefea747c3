"""The NumPy arithmetic of the mid-size host paths (gradient norm, bias add and its gradient), apart from their
Python.

Like :mod:`.host_kernels`: only the NumPy operations, over arrays the callers (:mod:`.host_norm`,
:mod:`.bias_add`) made over tensor host memory, so that ``benchmarks/bench_train.py`` books their time as
arithmetic MindSpore's kernels did before, not as mindspeed_ms's Python overhead.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ROW", "bias_add", "column_sum", "sum_of_squares"]

#: elements summed in float32 before the float64 accumulation (the worst-case relative error is ROW * 2**-24)
ROW = 128


def sum_of_squares(values: Any) -> float:
    """Return the sum of the squares of a 1-D float32 array: float32 rows of :data:`ROW`, added in float64."""
    import numpy as np

    whole = values.size - values.size % ROW
    total = 0.0
    if whole:
        rows = values[:whole].reshape(-1, ROW)
        total = float(np.add.reduce(np.einsum("ij,ij->i", rows, rows), dtype=np.float64))
    if whole != values.size:
        tail = values[whole:].astype(np.float64)
        total += float(np.dot(tail, tail))
    return total


def column_sum(values: Any, out: Any) -> None:
    """Write the sums of the columns of a 2-D float32 array to ``out``: accumulated in float64, rounded once."""
    import numpy as np

    np.copyto(out, np.add.reduce(values, axis=0, dtype=np.float64), casting="same_kind")


def bias_add(values: Any, bias: Any, out: Any) -> None:
    """``out = values + bias`` (``bias`` along the last dimension): float32 additions, PyTorch's."""
    import numpy as np

    np.add(values, bias, out=out)
