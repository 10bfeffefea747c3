"""Types of the optional C copies of :mod:`mindspeed_ms.compat.host_arithmetic` (``_host_copies.c``)."""

from typing import Any

def masked_fill(out: Any, values: Any, mask: Any, value: float, /) -> Any:
    """``out = values``, ``value`` where ``mask`` (repeating along the leading elements) in one pass;
    ``NotImplemented`` unless contiguous float32 buffers of one length and a bool mask whose length divides it."""

def narrow_indices(out: Any, source: Any, rows: int, /) -> Any:
    """``out = source`` (int64) as int32 in one pass: True when every index is in ``[0, rows)``, False at the first
    one outside; ``NotImplemented`` unless a contiguous int32 ``out`` and int64 ``source`` of one length."""
