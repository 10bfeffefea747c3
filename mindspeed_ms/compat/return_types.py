"""``torch.return_types``-like results: a tuple of (values, indices) with named fields.

MSAdapter's ``max``/``min`` over a dim, ``sort`` and ``topk`` give plain tuples; PyTorch gives structseqs with
``.values``/``.indices``. The replacements in :mod:`.msadapter_cpu_ops` and :mod:`.reductions` build theirs here.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["return_type"]


@functools.cache
def return_type(name: str) -> type:
    """Return a ``torch.return_types.<name>``-like class: a tuple of (values, indices) with named fields.

    Like PyTorch's structseq it is built from one iterable, so ``type(result)(items)`` works.
    """

    def __repr__(self: Any) -> str:
        return f"torch.return_types.{name}(values={self[0]!r}, indices={self[1]!r})"

    namespace = {"__slots__": (), "__module__": "torch.return_types", "n_fields": 2, "n_sequence_fields": 2,
                 "values": property(lambda self: self[0], doc="the values"),
                 "indices": property(lambda self: self[1], doc="the indices (int64)"), "__repr__": __repr__}
    return type(name, (tuple,), namespace)
