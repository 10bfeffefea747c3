"""Types of the optional C loops of :mod:`mindspeed_ms.compat.host_kernels` (``_host_loops.c``)."""

from typing import Any

def adam_moments(grad: Any, first: Any, second: Any, maximum: Any, tmp: Any, negated: Any, weight: float,
                 keep: float, scale: float, root: float, epsilon: float, /) -> Any:
    """Adam's moments and denominator of one chunk in one pass; ``NotImplemented`` unless float32 buffers."""

def adam_apply(first: Any, denominator: Any, step_size: float, update: Any, target: Any, decay: Any, /) -> Any:
    """``target = target * decay + (first * step_size) / denominator`` in one pass; ``NotImplemented`` unless
    float32 buffers."""

def adam_bucket(grad: Any, first: Any, second: Any, maximum: Any, tmp: Any, update: Any, maximize: bool, weight: float,
                keep: float, scale: float, root: float, epsilon: float, targets: list[Any], offsets: list[int],
                factors: list[tuple[Any, Any]], chunk: int, /) -> Any:
    """``adam_moments`` then ``adam_apply`` on each target's part, chunk by chunk, over a whole bucket in one call;
    ``NotImplemented`` unless float32 buffers laid out as described."""
