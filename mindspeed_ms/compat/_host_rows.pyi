"""Types of the optional C row loops of :mod:`mindspeed_ms.compat.host_arithmetic` (``_host_rows.c``)."""

from typing import Any

def layer_norm_forward(x: Any, weight: Any, bias: Any, eps: float, y: Any, mean: Any, rstd: Any, /) -> Any:
    """PyTorch's layer norm of the ``len(mean)`` rows of ``x`` into ``y``, ``mean`` and ``rstd``; ``NotImplemented``
    unless C-contiguous float32 buffers of matching lengths (``weight``/``bias`` None or one row long)."""

def layer_norm_backward(grad: Any, x: Any, mean: Any, rstd: Any, weight: Any, dx: Any, dweight: Any, dbias: Any,
                        /) -> Any:
    """PyTorch's layer-norm gradients into ``dx``, ``dweight``, ``dbias`` (the last two None or one row long);
    ``NotImplemented`` unless C-contiguous float32 buffers of matching lengths."""

def column_sum(values: Any, out: Any, /) -> Any:
    """``out`` = the column sums of ``values`` (rows of ``len(out)``) in float64, rounded once; ``NotImplemented``
    unless C-contiguous float32 buffers."""

def bias_add(values: Any, bias: Any, out: Any, /) -> Any:
    """``out = values + bias`` along rows of ``len(bias)``; ``NotImplemented`` unless C-contiguous float32 buffers."""

def scale(values: Any, factor: float, /) -> Any:
    """``values *= factor`` (float32) in place; ``NotImplemented`` unless a writable C-contiguous float32 buffer."""

def sum_of_squares(values: Any, /) -> Any:
    """The sum of the squares of a float32 buffer in float64; ``NotImplemented`` unless C-contiguous float32."""

def set_threads(count: int, /) -> int:
    """Large calls use ``count`` threads (1 or 2) from now on (the results are the same bits); returns the previous
    count."""
