"""The NumPy arithmetic of the mid-size host paths (gradient norm, bias add and its gradient, layer norm, RMS norm,
softmax, the rotary embedding, and the copies that stand in for the Contiguous and MaskedFill kernels), apart from
their Python.

Like :mod:`.host_kernels`: only the NumPy operations, over arrays the callers (:mod:`.host_norm`, :mod:`.bias_add`,
:mod:`.host_layer_norm`, :mod:`.host_rms_norm`, :mod:`.host_softmax`, :mod:`.host_rope`; their docstrings say whose
arithmetic it is) made over tensor host memory, so that ``benchmarks/bench_train.py`` books their time as arithmetic
MindSpore's kernels did before, not as mindspeed_ms's Python overhead.
"""

from __future__ import annotations

from typing import Any

try:  # one pass per element for the MaskedFill copies (setup.py builds it where it can)
    from mindspeed_ms.compat import _host_copies as _COPIES
except ImportError:  # not built: NumPy's two passes, the same bits
    _COPIES = None  # type: ignore[assignment]

#: Whether :func:`masked_fill` runs in the optional C extension where it can (else NumPy's passes; the same bits).
COPIES_ACCELERATED = _COPIES is not None

try:  # one pass per row, two threads where large (setup.py builds it where it can)
    from mindspeed_ms.compat import _host_rows as _ROWS
except ImportError:  # not built: NumPy's passes (layer norm: the same arithmetic, NumPy's float64 summation order)
    _ROWS = None  # type: ignore[assignment]

#: Whether the layer norm, bias add, column sums and sum of squares run in the optional C extension (else NumPy).
ROWS_ACCELERATED = _ROWS is not None


def set_row_threads(count: int) -> int:
    """Let the C row loops share large calls between ``count`` threads (1, the default, or 2) from now on: the results
    are the same bits either way. Returns the previous count (1 without the extension, where NumPy runs on one).

    One by default, by measurement: in a MindSpore training process the helper thread competes with MindSpore's
    pool threads, which spin for a while after every kernel, and with the machine's other work. At the mid size on
    the loaded 2-core machine two threads made the layer norm's backward ~11 ms a call against ~2.6 ms on one (the
    forward ~8 against ~1.7, the bias add ~3 against ~0.8); in a process without MindSpore's pool they were no
    faster either. A quiet machine with cores to spare may differ: two threads are there to measure it."""
    if count not in (1, 2):
        raise ValueError(f"set_row_threads takes 1 or 2 threads, not {count!r}")
    return 1 if _ROWS is None else int(_ROWS.set_threads(count))

__all__ = ["COPIES_ACCELERATED", "ROW", "ROWS_ACCELERATED", "attention_backward", "attention_forward", "bias_add",
           "column_sum", "contiguous_copy", "copy_into", "fill_zeros",
           "cross_entropy_forward", "cross_entropy_gradient", "cross_entropy_loss", "layer_norm_backward",
           "layer_norm_forward", "masked_fill", "narrow_indices",
           "numpy_layer_norm_backward", "numpy_layer_norm_forward", "numpy_masked_fill", "numpy_narrow_indices",
           "rms_norm_backward", "rms_norm_forward", "rope_backward", "rope_forward", "rotate_half",
           "rotate_half_transposed", "row_maxima", "scatter_pieces", "silu_backward", "silu_forward",
           "swiglu_backward", "swiglu_forward", "set_row_threads", "softmax_backward", "softmax_forward",
           "split_pieces", "sum_of_squares", "ufunc_into"]

#: elements summed in float32 before the float64 accumulation (the worst-case relative error is ROW * 2**-24)
ROW = 128


def sum_of_squares(values: Any) -> float:
    """Return the sum of the squares of a 1-D float32 array: in the optional C extension the squares in float64
    (exact), blocks of 65,536 added in order (two threads: the same bits); in NumPy float32 rows of :data:`ROW`,
    added in float64 (within ``ROW * 2**-24`` relative)."""
    import numpy as np

    if _ROWS is not None:
        total = _ROWS.sum_of_squares(values)
        if total is not NotImplemented:
            return float(total)

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
    """Write the sums of the columns of a 2-D float32 array to ``out``: accumulated in float64 down each column in
    row order, rounded once (in the optional C extension, split by columns between two threads: the same bits)."""
    import numpy as np

    if _ROWS is None or _ROWS.column_sum(values, out) is NotImplemented:
        np.copyto(out, np.add.reduce(values, axis=0, dtype=np.float64), casting="same_kind")


def bias_add(values: Any, bias: Any, out: Any) -> None:
    """``out = values + bias`` (``bias`` along the last dimension): float32 additions, PyTorch's."""
    import numpy as np

    if _ROWS is None or _ROWS.bias_add(values, bias, out) is NotImplemented:
        np.add(values, bias, out=out)


def layer_norm_forward(x: Any, weight: Any, bias: Any, eps: float, out: Any = None) -> tuple[Any, Any, Any]:
    """PyTorch's layer norm of the rows of a 2-D float32 array (one pass per row in the optional C extension, the
    rows split between two threads; else :func:`numpy_layer_norm_forward`, the same arithmetic).

    The mean and the (population) variance of each row are accumulated in float64 and rounded once to float32 (the
    float32 nearest the exact moments but for rare double roundings; PyTorch's float32 Welford accumulation is
    within a few units of them), then in float32 as PyTorch's kernel: ``rstd = 1 / sqrt(var + eps)``,
    ``y = (x * rstd + (-rstd * mean)) * weight + bias``.

    Args:
        x: ``[rows, n]`` C-contiguous float32 array.
        weight, bias: ``[n]`` float32 arrays, or None.
        eps: the variance's epsilon (rounded to float32, as PyTorch does).
        out: a C-contiguous ``[rows, n]`` float32 array to write ``y`` into, or None for a new array.

    Returns:
        ``(y, mean, rstd)``: ``y`` ``[rows, n]`` (``out`` when given), ``mean`` and ``rstd`` ``[rows, 1]``, float32.
    """
    import numpy as np

    rows = x.shape[0]
    y = np.empty(x.shape, np.float32) if out is None else out
    mean, rstd = np.empty((rows, 1), np.float32), np.empty((rows, 1), np.float32)
    if _ROWS is not None and _ROWS.layer_norm_forward(x, weight, bias, float(eps), y, mean,
                                                      rstd) is not NotImplemented:
        return y, mean, rstd
    return numpy_layer_norm_forward(x, weight, bias, eps, y)


def numpy_layer_norm_forward(x: Any, weight: Any, bias: Any, eps: float, out: Any = None) -> tuple[Any, Any, Any]:
    """:func:`layer_norm_forward` in NumPy (what runs without the C extension; float64 sums in NumPy's order)."""
    import numpy as np

    n = x.shape[1]
    with np.errstate(all="ignore"):  # non-finite rows give NaN/inf as PyTorch's (and the C loop's) do
        wide = x.astype(np.float64)
        mean64 = np.add.reduce(wide, axis=1, keepdims=True) / n
        wide -= mean64
        variance = (np.einsum("ij,ij->i", wide, wide)[:, None] / n).astype(np.float32)
        mean = mean64.astype(np.float32)
        rstd = np.float32(1.0) / np.sqrt(variance + np.float32(eps))
        y = np.multiply(x, rstd, out=out)
        y += -rstd * mean
        if weight is not None:
            y *= weight
        if bias is not None:
            y += bias
    return y, mean, rstd


def layer_norm_backward(grad: Any, x: Any, mean: Any, rstd: Any, weight: Any, need_weight: bool, need_bias: bool,
                        out: Any = None, weight_out: Any = None, bias_out: Any = None) -> tuple[Any, Any, Any]:
    """PyTorch's layer-norm gradients from the forward's input and moments (2-D float32 arrays, see
    :func:`layer_norm_forward`; one pass per row in the optional C extension, else
    :func:`numpy_layer_norm_backward`).

    Per row ``db = sum(dy * weight)`` and ``ds = sum(dy * weight * x)`` accumulated in float64 and rounded once, then
    PyTorch's float32 formula: ``b = (db * mean - ds) * rstd^3 / n``, ``c = -b * mean - db * rstd / n``,
    ``dx = rstd * dy * weight + b * x + c``. ``dweight = sum over rows of dy * (x * rstd + (-rstd * mean))`` and
    ``dbias = sum over rows of dy`` in float64, rounded once (PyTorch: float32 sums).

    ``out``: a C-contiguous float32 array of ``x``'s shape to write ``dx`` into, or None for a new array;
    ``weight_out``/``bias_out``: C-contiguous ``[n]`` float32 arrays to write ``dweight``/``dbias`` into (when asked
    for), or None for new arrays.

    Returns:
        ``(dx, dweight, dbias)``; ``dweight``/``dbias`` None unless asked for (``need_weight``/``need_bias``).
    """
    import numpy as np

    n = x.shape[1]
    dx = np.empty(x.shape, np.float32) if out is None else out
    dweight = (np.empty(n, np.float32) if weight_out is None else weight_out) if need_weight else None
    dbias = (np.empty(n, np.float32) if bias_out is None else bias_out) if need_bias else None
    if _ROWS is not None and _ROWS.layer_norm_backward(grad, x, mean, rstd, weight, dx, dweight,
                                                       dbias) is not NotImplemented:
        return dx, dweight, dbias
    dx, new_weight, new_bias = numpy_layer_norm_backward(grad, x, mean, rstd, weight, need_weight, need_bias, dx)
    if dweight is not None:
        np.copyto(dweight, new_weight)
    if dbias is not None:
        np.copyto(dbias, new_bias)
    return dx, dweight, dbias


def numpy_layer_norm_backward(grad: Any, x: Any, mean: Any, rstd: Any, weight: Any, need_weight: bool,
                              need_bias: bool, out: Any = None) -> tuple[Any, Any, Any]:
    """:func:`layer_norm_backward` in NumPy (what runs without the C extension; float64 sums in NumPy's order)."""
    import numpy as np

    with np.errstate(all="ignore"):  # non-finite values give NaN/inf as PyTorch's (and the C loop's) do
        return _numpy_layer_norm_backward(grad, x, mean, rstd, weight, need_weight, need_bias, out)


def _numpy_layer_norm_backward(grad: Any, x: Any, mean: Any, rstd: Any, weight: Any, need_weight: bool,
                               need_bias: bool, out: Any) -> tuple[Any, Any, Any]:
    import numpy as np

    n = x.shape[1]
    scale = np.float32(1.0) / np.float32(n)
    scaled = grad * weight if weight is not None else grad
    db = np.add.reduce(scaled, axis=1, keepdims=True, dtype=np.float64).astype(np.float32)
    ds = np.einsum("ij,ij->i", scaled, x, dtype=np.float64)[:, None].astype(np.float32)
    b = (db * mean - ds) * rstd * rstd * rstd * scale
    c = -b * mean - db * rstd * scale
    dx = np.multiply(grad, rstd, out=out)
    if weight is not None:
        dx *= weight
    dx += x * b
    dx += c
    dweight = dbias = None
    if need_weight:
        normalized = x * rstd
        normalized += -rstd * mean
        dweight = np.einsum("ij,ij->j", grad, normalized, dtype=np.float64).astype(np.float32)
    if need_bias:
        dbias = grad.sum(axis=0, dtype=np.float64).astype(np.float32)
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


def copy_into(values: Any, *outs: Any) -> None:
    """Copy ``values`` into each array of ``outs`` (its shape): the copies MindSpore's engine makes of a gradient it
    hands to two inputs (its ``Clone``), each input's gradient a tensor of its own."""
    import numpy as np

    for out in outs:
        np.copyto(out, values)


def fill_zeros(out: Any) -> None:
    """Zero the array ``out`` in place: the work of MindSpore's kernels for ``zero_`` (a filled tensor copied in)."""
    out.fill(0)


def masked_fill(values: Any, mask: Any, value: Any, out: Any) -> None:
    """``out = values`` with ``value`` (a float32 scalar) where ``mask`` (a bool array that broadcasts to ``out``'s
    shape): one pass in the optional C extension when the mask's shape is ``out``'s trailing shape (megatron's
    causal ``[1, 1, s, s]`` over ``[b, np, s, s]``) and the arrays are contiguous, else NumPy's two; the same bits."""
    if _COPIES is None or not _repeats(mask.shape, out.shape) or \
            _COPIES.masked_fill(out, values, mask, float(value)) is NotImplemented:
        numpy_masked_fill(values, mask, value, out)


def narrow_indices(source: Any, out: Any, rows: int) -> bool:
    """``out = source`` (int64 indices) as int32 when every index is in ``[0, rows)`` (``rows`` at most ``2**31``):
    True; False when one is outside (``out`` then holds anything). One pass in the optional C extension where both
    arrays are C-contiguous, else NumPy's range check and copy; the same values (exact: each index fits)."""
    if _COPIES is not None:
        inside = _COPIES.narrow_indices(out, source, rows)
        if inside is not NotImplemented:
            return bool(inside)
    return numpy_narrow_indices(source, out, rows)


def numpy_narrow_indices(source: Any, out: Any, rows: int) -> bool:
    """:func:`narrow_indices` in NumPy (what runs where the C extension does not take the arrays)."""
    if source.size and (int(source.min()) < 0 or int(source.max()) >= rows):
        return False
    out[...] = source
    return True


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


# -- SiLU and megatron's SwiGLU (compat/host_silu.py, compat/host_swiglu.py) ---------------------------------------

def silu_forward(x: Any, out: Any) -> None:
    """``out = x / (1 + exp(-x))`` over float32 arrays."""
    import numpy as np

    np.negative(x, out=out)
    np.exp(out, out=out)
    out += np.float32(1.0)
    np.divide(x, out, out=out)


def silu_backward(grad: Any, x: Any, out: Any) -> None:
    """``out = (grad * s) * (1 + x * (1 - s))``, ``s = 1 / (1 + exp(-x))``, over float32 arrays."""
    import numpy as np

    one = np.float32(1.0)
    s = np.exp(-x)
    s += one
    np.divide(one, s, out=s)
    np.multiply(grad, s, out=out)
    np.subtract(one, s, out=s)
    s *= x
    s += one
    out *= s


def swiglu_forward(x: Any, out: Any) -> Any:
    """``out = silu(a) * b`` for the halves ``a``, ``b`` of the float32 rows ``x`` (``[rows, 2n]``; ``out``
    ``[rows, n]``); return ``silu(a)`` (a new array, for the backward)."""
    import numpy as np

    half = x.shape[1] // 2
    a, b = x[:, :half], x[:, half:]
    silu = np.empty(a.shape, np.float32)
    silu_forward(a, silu)
    np.multiply(silu, b, out=out)
    return silu


def swiglu_backward(grad: Any, x: Any, silu: Any, out: Any) -> None:
    """The gradient of :func:`swiglu_forward` as PyTorch's autograd computes it, into ``out`` (``[rows, 2n]``):
    ``grad * silu(a)`` for ``b``, SiLU's backward of ``grad * b`` for ``a``."""
    import numpy as np

    half = x.shape[1] // 2
    a, b = x[:, :half], x[:, half:]
    np.multiply(grad, silu, out=out[:, half:])
    silu_backward(np.multiply(grad, b), a, out[:, :half])


def cross_entropy_forward(logits: Any, maxima: Any, target: Any, mask: Any, picked: Any, sums: Any) -> None:
    """Megatron's vocab-parallel cross-entropy forward after the maximum, PyTorch's float32 steps over ``logits``
    (``[rows, vocab]``, written in place as megatron writes its tensor): subtract each row's ``maxima``, pick each
    row's ``target`` column into ``picked`` (0.0 where ``mask`` is set), exponentiate, sum each row into ``sums``
    (``maxima``, ``target``, ``mask``, ``picked``, ``sums``: ``[rows]``)."""
    import numpy as np

    np.subtract(logits, maxima[:, None], out=logits)
    np.copyto(picked, logits[np.arange(logits.shape[0]), target])
    picked[mask] = 0.0
    np.exp(logits, out=logits)
    np.add.reduce(logits, axis=1, out=sums)


def row_maxima(logits: Any, out: Any) -> None:
    """The largest value of each row of ``logits`` (``[rows, vocab]``) into ``out`` (``[rows]``); a NaN in a row is
    its maximum, as in PyTorch's ``max(dim=-1)``."""
    import numpy as np

    np.maximum.reduce(logits, axis=1, out=out)


def cross_entropy_loss(softmax: Any, sums: Any, picked: Any, loss: Any) -> None:
    """Megatron's ``calculate_cross_entropy_loss`` in float32: ``loss = log(sums) - picked`` and the exponentials
    ``softmax`` (``[rows, vocab]``) divided by their row's sum in place (the others ``[rows]``)."""
    import numpy as np

    np.log(sums, out=loss)
    loss -= picked
    np.divide(softmax, sums[:, None], out=softmax)


def cross_entropy_gradient(softmax: Any, target: Any, update: Any, grad_output: Any, out: Any) -> None:
    """Megatron's vocab-parallel cross-entropy gradient, PyTorch's two float32 steps: ``out = softmax`` with
    ``update`` subtracted at each row's ``target`` column, then each row times its ``grad_output`` (``out``,
    ``softmax``: ``[rows, vocab]``; the others ``[rows]``)."""
    import numpy as np

    np.copyto(out, softmax)
    rows = np.arange(out.shape[0])
    out[rows, target] -= update
    out *= grad_output[:, None]


# -- megatron's core attention (compat/host_attention.py) --------------------------------------------------------

def _blas_rows(array: Any) -> Any:
    """``array`` (``[s, b, np, hn]``) if OpenBLAS can read each head's ``[s, hn]`` matrix in place (unit element
    stride, rows at least ``hn`` apart), else a contiguous copy (NumPy's matmul would take its own loop, another
    summation order)."""
    import numpy as np

    size = array.itemsize
    if array.strides[3] == size and array.strides[0] >= array.shape[3] * size and array.strides[0] % size == 0:
        return array
    return np.ascontiguousarray(array)


def attention_forward(query: Any, key: Any, value: Any, mask: Any, alpha: float, out: Any) -> Any:
    """``DotProductAttention``'s arithmetic: ``softmax(masked_fill(alpha * q @ k^T, mask, -10000)) @ v``.

    ``query`` ``[sq, b, np, hn]``, ``key``/``value`` ``[sk, b, np, hn]`` (any strides: the batched products
    read each head's rows in place where OpenBLAS can, given their row stride; the same bits as over contiguous
    copies), ``mask`` a bool array that broadcasts to ``[b, np, sq, sk]`` (True: masked) or None; the context is
    written into ``out`` (``[sq, b, np, hn]``). Returns the probabilities ``[b, np, sq, sk]`` (for
    :func:`attention_backward`, with q, k and v).
    """
    import numpy as np

    v = _blas_rows(value).transpose(1, 2, 0, 3)
    scores = np.matmul(_blas_rows(query).transpose(1, 2, 0, 3), _blas_rows(key).transpose(1, 2, 3, 0))
    if alpha != 1.0:
        scores *= np.float32(alpha)
    if mask is not None:
        np.copyto(scores, np.float32(-10000.0), where=np.broadcast_to(mask, scores.shape))
    rows = scores.reshape(-1, scores.shape[-1])
    softmax_forward(rows, rows)
    np.matmul(scores, v, out=out.transpose(1, 2, 0, 3))
    return scores


def attention_backward(grad: Any, inputs: tuple[Any, Any, Any], probs: Any, mask: Any, alpha: float,
                       grad_query: Any, grad_key: Any, grad_value: Any) -> None:
    """The gradients of :func:`attention_forward` (PyTorch's bmm, softmax, masked_fill and baddbmm backward, in
    their order) from ``grad`` (``[sq, b, np, hn]``), the forward's ``inputs`` (q, k, v) and ``probs``, written
    into ``grad_query`` (``[sq, b, np, hn]``), ``grad_key`` and ``grad_value`` (``[sk, b, np, hn]``: any strides
    with a unit last one and rows at least ``hn`` apart, written in place); the rest any strides."""
    import numpy as np

    q, k, v = (_blas_rows(part).transpose(1, 2, 0, 3) for part in inputs)
    g = _blas_rows(grad).transpose(1, 2, 0, 3)
    np.matmul(probs.transpose(0, 1, 3, 2), g, out=grad_value.transpose(1, 2, 0, 3))
    scores = np.matmul(g, v.transpose(0, 1, 3, 2))
    rows = scores.reshape(-1, scores.shape[-1])
    softmax_backward(rows, probs.reshape(rows.shape), rows)
    if mask is not None:
        np.copyto(scores, np.float32(0.0), where=np.broadcast_to(mask, scores.shape))
    dq = grad_query.transpose(1, 2, 0, 3)
    np.matmul(scores, k, out=dq)
    dk = grad_key.transpose(1, 2, 0, 3)
    np.matmul(scores.transpose(0, 1, 3, 2), q, out=dk)
    if alpha != 1.0:
        dq *= np.float32(alpha)
        dk *= np.float32(alpha)


def rms_norm_forward(x: Any, weight: Any, eps: float, out: Any) -> Any:
    """``out = (x * r) * weight`` for float32 rows ``x`` (``weight`` None: no product); return ``r`` (rows, 1)."""
    import numpy as np

    squares = np.einsum("ij,ij->i", x, x, dtype=np.float64)
    mean = (squares / x.shape[1]).astype(np.float32)
    r = (np.float32(1.0) / np.sqrt(mean + np.float32(eps))).reshape(-1, 1)
    np.multiply(x, r, out=out)
    if weight is not None:
        np.multiply(out, weight, out=out)
    return r


def rms_norm_backward(grad: Any, x: Any, r: Any, weight: Any, dx: Any, dweight: Any) -> None:
    """Fill ``dx`` (and ``dweight`` where not None) from the rows' gradient ``grad`` (:mod:`.host_rms_norm`'s
    docstring gives the order of the operations)."""
    import numpy as np

    gw = grad if weight is None else grad * weight
    dot = np.einsum("ij,ij->i", gw, x, dtype=np.float64).astype(np.float32).reshape(-1, 1)
    # autograd's order in float32: rsqrt's (-0.5 * grad) * r**3, mean's / n, pow's * (2 * x)
    coefficient = (np.float32(-0.5) * dot) * (r * r * r) / np.float32(x.shape[1])
    np.multiply(gw, r, out=dx)
    dx += coefficient * (np.float32(2.0) * x)
    if dweight is not None:
        dweight[...] = np.einsum("ij,ij->j", grad, x * r, dtype=np.float64)


def rotate_half(x: Any, interleaved: bool) -> Any:
    """megatron's ``_rotate_half``: ``[-x2, x1]`` of the halves, or of the odd/even elements where interleaved."""
    import numpy as np

    if not interleaved:
        half = x.shape[-1] // 2
        return np.concatenate((-x[..., half:], x[..., :half]), axis=-1)
    out = np.empty(x.shape, np.float32)
    np.negative(x[..., 1::2], out=out[..., 0::2])
    out[..., 1::2] = x[..., 0::2]
    return out


def rotate_half_transposed(g: Any, interleaved: bool) -> Any:
    """The gradient of :func:`rotate_half`'s input from its output's ``g``: ``[g2, -g1]`` (the transpose)."""
    import numpy as np

    out = np.empty(g.shape, np.float32)
    if not interleaved:
        half = g.shape[-1] // 2
        out[..., :half] = g[..., half:]
        np.negative(g[..., :half], out=out[..., half:])
        return out
    out[..., 0::2] = g[..., 1::2]
    np.negative(g[..., 0::2], out=out[..., 1::2])
    return out


def rope_forward(x: Any, rope: Any, out: Any) -> None:
    """:mod:`.host_rope`'s forward: ``out = x * cos + rotate_half(x) * sin`` (``rope``: its ``Rope``) in float32, each
    product rounded, then the sum (PyTorch's kernels)."""
    import numpy as np

    np.multiply(x, rope.cos, out=out)
    rotated = rotate_half(x, rope.interleaved)
    np.multiply(rotated, rope.sin, out=rotated)
    np.add(out, rotated, out=out)


def rope_backward(grad: Any, rope: Any, out: Any) -> None:
    """:mod:`.host_rope`'s backward, the input's gradient: ``grad * cos + rotate_half^T(grad * sin)`` (PyTorch's
    autograd sums the two)."""
    import numpy as np

    np.multiply(grad, rope.cos, out=out)
    scaled = np.multiply(grad, rope.sin, dtype=np.float32)
    np.add(out, rotate_half_transposed(scaled, rope.interleaved), out=out)


def ufunc_into(ufunc: Any, a: Any, b: Any, out: Any) -> None:
    """``ufunc(a, b)`` into ``out`` with NumPy's floating-point warnings off: IEEE results (infinities, NaNs), as
    PyTorch's kernels give them (:mod:`.recorded_inplace`'s multiply and divide and their gradients)."""
    import numpy as np

    with np.errstate(all="ignore"):
        ufunc(a, b, out=out)
