"""``torch.unique`` as PyTorch computes it (MindSpore's CPU backend).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13 (tests/conformance/cases/
ops_unique.py): MSAdapter's ``unique`` runs MindSpore's ``ops.unique``, which keeps the values in the order they
first occur, so ``torch.unique(x)`` (``sorted=True``, the default) returned them **unsorted**, with an inverse into
that order, silently; ``return_counts=True`` raised (it compares the values with the whole input by broadcasting).
PyTorch's CPU kernel sorts, also for ``sorted=False``, counts, gives each nan its own entry, and with ``dim=`` sorts
the slices lexicographically.

Here the values are read on the host and NumPy's ``unique`` computes the same: sorted values (nan last, one entry
each), the inverse in the input's shape (along ``dim``: one index per slice), the counts; int64 indices, the input's
dtype for the values. No gradient flows through ``unique``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

__all__ = ["unique", "unique_wrapper"]


def unique(values: np.ndarray, dim: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PyTorch's ``(unique values, inverse, counts)`` of a NumPy array, flattened or along ``dim``."""
    if dim is None:
        found, inverse, counts = np.unique(values.reshape(-1), return_inverse=True, return_counts=True,
                                           equal_nan=False)
        return found, inverse.reshape(values.shape).astype(np.int64), counts.astype(np.int64)
    found, inverse, counts = np.unique(values, axis=dim, return_inverse=True, return_counts=True)
    return found, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


def unique_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``torch.unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None)`` and
    ``Tensor.unique``: computed on the host."""

    @functools.wraps(op)
    def unique_as_torch(input: Any, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
                        dim: int | None = None) -> Any:
        shape = getattr(input, "shape", None)
        if (shape is None or not hasattr(input, "asnumpy")
                or (dim is not None and (not isinstance(dim, int) or not -len(shape) <= dim < len(shape)))):
            return op(input, sorted, return_inverse, return_counts, dim)
        import mindspore

        found, inverse, counts = unique(input.asnumpy(), None if dim is None else dim % len(shape))
        results = [mindspore.Tensor(found)]
        if return_inverse:
            results.append(mindspore.Tensor(inverse))
        if return_counts:
            results.append(mindspore.Tensor(counts))
        return tuple(results) if len(results) > 1 else results[0]

    return unique_as_torch
