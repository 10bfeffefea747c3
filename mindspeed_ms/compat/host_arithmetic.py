"""The NumPy arithmetic of the mid-size host paths (gradient norm, bias add and its gradient, layer norm, softmax,
and the copies that stand in for the Contiguous and MaskedFill kernels), apart from their Python.

Like :mod:`.host_kernels`: only the NumPy operations, over arrays the callers (:mod:`.host_norm`,
:mod:`.bias_add`, :mod:`.host_layer_norm`, :mod:`.host_softmax`; their docstrings say whose arithmetic it is) made
over tensor host memory, so that ``benchmarks/bench_train.py`` books their time as
arithmetic MindSpore's kernels did before, not as mindspeed_ms's Python overhead.
"""

from __future__ import annotations

from typing import Any

try:  # one pass per element for the MaskedFill copies (setup.py builds it where it can)
    from mindspeed_ms.compat import _host_copies as _COPIES
except ImportError:  # not built: NumPy's two passes, the same bits
    _COPIES = None  # type: ignore[assignment]

#: Whether :func:`masked_fill` runs in the optional C extension where it can (else NumPy's passes; the same bits).
COPIES_ACCELERATED = _COPIES is not None

__all__ = ["COPIES_ACCELERATED", "ROW", "bias_add", "column_sum", "contiguous_copy", "cross_entropy_gradient",
           "layer_norm_backward", "layer_norm_forward", "masked_fill", "numpy_masked_fill", "scatter_pieces",
           "softmax_backward", "softmax_forward", "split_pieces", "sum_of_squares"]

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


def layer_norm_forward(x: Any, weight: Any, bias: Any, eps: float, out: Any = None) -> tuple[Any, Any, Any, Any]:
    """PyTorch's layer norm of the rows of a 2-D float32 array.

    Args:
        x: ``[rows, n]`` float32 array.
        weight, bias: ``[n]`` float32 arrays, or None.
        eps: the variance's epsilon.
        out: a ``[rows, n]`` float32 array to write ``y`` into (the same operations), or None for a new array.

    Returns:
        ``(y, normalized, mean, rstd)``: ``y`` and ``normalized = x * rstd + (-rstd * mean)`` ``[rows, n]``,
        ``mean`` and ``rstd`` ``[rows, 1]``, all float32 (``normalized`` may be ``y`` itself without weight and bias
        and without ``out``; with ``out``, ``y`` is ``out`` and ``normalized`` a separate array).
    """
    import numpy as np

    n = np.float32(x.shape[1])
    mean = np.add.reduce(x, axis=1, keepdims=True)
    mean /= n
    centered = x - mean
    variance = np.einsum("ij,ij->i", centered, centered)[:, None]
    variance /= n
    rstd = np.float32(1.0) / np.sqrt(variance + np.float32(eps))
    normalized = np.multiply(x, rstd)
    normalized += -rstd * mean
    if weight is None and bias is None:
        if out is None:
            return normalized, normalized, mean, rstd
        np.copyto(out, normalized)
        return out, normalized, mean, rstd
    if weight is not None:
        y = np.multiply(normalized, weight, out=out)
    else:
        y = normalized.copy() if out is None else out
        if out is not None:
            np.copyto(out, normalized)
    if bias is not None:
        y += bias
    return y, normalized, mean, rstd


def layer_norm_backward(grad: Any, x: Any, normalized: Any, mean: Any, rstd: Any, weight: Any,
                        need_weight: bool, need_bias: bool, out: Any = None) -> tuple[Any, Any, Any]:
    """PyTorch's layer-norm gradients from the forward's values (2-D float32 arrays, see :func:`layer_norm_forward`).

    ``out``: a float32 array of ``x``'s shape to write ``dx`` into (the same operations), or None for a new array.

    Returns:
        ``(dx, dweight, dbias)``; ``dweight``/``dbias`` None unless asked for (``need_weight``/``need_bias``).
    """
    import numpy as np

    scale = np.float32(1.0 / x.shape[1])
    scaled = grad * weight if weight is not None else grad
    db = np.add.reduce(scaled, axis=1, keepdims=True)
    ds = np.einsum("ij,ij->i", scaled, x)[:, None]
    b = (db * mean - ds) * rstd * rstd * rstd * scale
    c = -b * mean - db * rstd * scale
    dx = np.multiply(grad, rstd, out=out)
    if weight is not None:
        dx *= weight
    dx += x * b
    dx += c
    dweight = np.einsum("ij,ij->j", grad, normalized, dtype=np.float64).astype(np.float32) if need_weight else None
    dbias = grad.sum(axis=0, dtype=np.float64).astype(np.float32) if need_bias else None
    return dx, dweight, dbias


def softmax_forward(x: Any, out: Any = None) -> Any:
    """PyTorch's softmax of the rows of a 2-D float32 array (into ``out``, a float32 array of x's shape, or a new
    array)."""
    import numpy as np

    out = np.subtract(x, np.maximum.reduce(x, axis=1, keepdims=True), out=out)
    np.exp(out, out=out)
    total = np.add.reduce(out, axis=1, keepdims=True)
    out *= np.float32(1.0) / total
    return out


def softmax_backward(grad: Any, y: Any, out: Any = None) -> Any:
    """PyTorch's softmax gradient ``(grad - sum(grad * y)) * y`` of 2-D float32 arrays (into ``out``, a float32
    array of their shape, or a new array)."""
    import numpy as np

    dot = np.einsum("ij,ij->i", grad, y)[:, None]
    out = np.subtract(grad, dot, out=out)
    out *= y
    return out


# -- the copies that stand in for MindSpore's Contiguous and MaskedFill kernels (compat/fast_contiguous.py,
# compat/fast_masked_fill.py): the kernels' own work, written straight into the result's memory --------------------

def contiguous_copy(values: Any, out: Any) -> None:
    """Copy ``values`` (any strides) into the contiguous array ``out`` of its shape: what ``Contiguous`` does."""
    import numpy as np

    np.copyto(out, values)


def masked_fill(values: Any, mask: Any, value: Any, out: Any) -> None:
    """``out = values`` with ``value`` (a float32 scalar) where ``mask`` (a bool array that broadcasts to ``out``'s
    shape): one pass in the optional C extension when the mask's shape is ``out``'s trailing shape (megatron's
    causal ``[1, 1, s, s]`` over ``[b, np, s, s]``) and the arrays are contiguous, else NumPy's two; the same bits."""
    if _COPIES is None or not _repeats(mask.shape, out.shape) or \
            _COPIES.masked_fill(out, values, mask, float(value)) is NotImplemented:
        numpy_masked_fill(values, mask, value, out)


def numpy_masked_fill(values: Any, mask: Any, value: Any, out: Any) -> None:
    """:func:`masked_fill` in NumPy's two passes (what runs where the C extension does not)."""
    import numpy as np

    np.copyto(out, values)
    np.copyto(out, value, where=np.broadcast_to(mask, out.shape))


def _repeats(mask: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether a mask of shape ``mask`` broadcast to ``shape`` is the mask's elements repeated end to end."""
    trailing = mask[next((i for i, n in enumerate(mask) if n != 1), len(mask)):]
    return len(trailing) <= len(shape) and tuple(shape[len(shape) - len(trailing):]) == trailing


# -- the mid size's backward (compat/host_split.py) --------------------------------------------------------------

def split_pieces(values: Any, dim: int, pieces: list[Any]) -> None:
    """Copy consecutive pieces of ``values`` along ``dim`` into the arrays ``pieces`` (their sizes along ``dim``)."""
    import numpy as np

    start = 0
    for piece in pieces:
        size = piece.shape[dim]
        np.copyto(piece, values[(slice(None),) * dim + (slice(start, start + size),)])
        start += size


def scatter_pieces(grads: list[Any], sizes: tuple[int, ...], dim: int, out: Any) -> None:
    """Write ``grads`` (arrays, or None for zeros) side by side along ``dim`` into ``out``: the split's gradient."""
    import numpy as np

    start = 0
    for grad, size in zip(grads, sizes):
        place = out[(slice(None),) * dim + (slice(start, start + size),)]
        if grad is None:
            place.fill(0)
        else:
            np.copyto(place, grad)
        start += size


def cross_entropy_gradient(softmax: Any, target: Any, update: Any, grad_output: Any, out: Any) -> None:
    """Megatron's vocab-parallel cross-entropy gradient, PyTorch's two float32 steps: ``out = softmax`` with
    ``update`` subtracted at each row's ``target`` column, then each row times its ``grad_output`` (``out``,
    ``softmax``: ``[rows, vocab]``; the others ``[rows]``)."""
    import numpy as np

    np.copyto(out, softmax)
    rows = np.arange(out.shape[0])
    out[rows, target] -= update
    out *= grad_output[:, None]
