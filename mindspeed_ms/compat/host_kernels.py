"""The arithmetic mindspeed_ms runs in NumPy over tensor host memory, in place of MindSpore CPU kernels.

Each function is only the NumPy operations (IEEE float32/float64, as MindSpore's CPU kernels round them,
subnormals kept): the callers (:mod:`.flat_adam`, :mod:`.megatron_speed`, :mod:`.inplace`,
:mod:`.fast_matmul`) choose the memory and the scalars. They live apart so that a profile can tell this
arithmetic (work MindSpore's kernels did before: ``benchmarks/bench_train.py`` reports it on its own line) from
mindspeed_ms's Python overhead. NumPy's ufuncs are invisible to cProfile, so their time lands in these functions.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.compat import blas_threads

__all__ = ["ACCELERATED", "add", "adam_apply", "adam_bucket", "adam_moments", "matmul", "numpy_adam_apply",
           "numpy_adam_moments", "scale"]

try:  # one pass per element, the same float32 operations in the same order (setup.py builds it where it can)
    from . import _host_loops as _loops
except ImportError:  # not built: NumPy's passes, the same bits
    _loops = None  # type: ignore[assignment]

try:  # float32 scale over two threads (the same bits as NumPy's)
    from . import _host_rows as _rows
except ImportError:  # not built: NumPy's multiply
    _rows = None  # type: ignore[assignment]

#: Whether Adam's loops run in the optional C extension (else NumPy's passes; the same bits either way).
ACCELERATED = _loops is not None
#: The whole-bucket loop of the extension; None where it is not built, or built before it had one (a development
#: tree built in place and not rebuilt after a pull): then the caller's chunk loop runs.
_BUCKET = getattr(_loops, "adam_bucket", None)


def add(target: Any, source: Any) -> None:
    """``target += source`` in place."""
    import numpy as np

    np.add(target, source, out=target)


def scale(values: Any, factor: Any) -> None:
    """``values *= factor`` in place (``factor`` already of the values' dtype): float32 in the optional C row loops
    (two threads where large; the same bits), else NumPy's."""
    import numpy as np

    if _rows is None or _rows.scale(values, factor) is NotImplemented:
        np.multiply(values, factor, out=values)


def adam_moments(grad: Any, first: Any, second: Any, maximum: Any, tmp: Any, negated: Any,
                 scalars: tuple[Any, Any, Any, Any, Any]) -> Any:
    """Update Adam's moments of one chunk in place; leave the denominator in ``tmp``; return the gradient used.

    The per-parameter update's operations in its order: ``m = m + w * (g - m)`` (``mint.lerp`` for
    ``w < 0.5``), ``v = v * beta2 + (g * (1 - beta2)) * g``, ``max(v_max, v)`` with amsgrad,
    ``sqrt(v) / sqrt(1 - beta2 ** t) + eps``.

    Args:
        grad, first, second: the chunk of the gradient and of the moments (updated in place).
        maximum: the chunk of ``max_exp_avg_sq`` (updated in place), or None without amsgrad.
        tmp: work memory of the chunk's size; holds the denominator on return.
        negated: work memory for ``-grad`` (maximize), or None.
        scalars: ``(1 - beta1, beta2, 1 - beta2, sqrt(1 - beta2 ** t), eps)`` in the moments' dtype.
    """
    if _loops is not None and _loops.adam_moments(grad, first, second, maximum, tmp, negated,
                                                  *scalars) is not NotImplemented:
        return grad if negated is None else negated
    return numpy_adam_moments(grad, first, second, maximum, tmp, negated, scalars)


def numpy_adam_moments(grad: Any, first: Any, second: Any, maximum: Any, tmp: Any, negated: Any,
                        scalars: tuple[Any, Any, Any, Any, Any]) -> Any:
    """:func:`adam_moments` in NumPy passes (float32 buffers or not)."""
    import numpy as np

    weight, keep, scale_, root, epsilon = scalars
    if negated is not None:
        grad = np.negative(grad, out=negated)
    np.subtract(grad, first, out=tmp)
    np.multiply(tmp, weight, out=tmp)
    np.add(first, tmp, out=first)
    np.multiply(second, keep, out=second)
    np.multiply(grad, scale_, out=tmp)
    np.multiply(tmp, grad, out=tmp)
    np.add(second, tmp, out=second)
    if maximum is not None:
        second = np.maximum(maximum, second, out=maximum)
    np.sqrt(second, out=tmp)
    np.divide(tmp, root, out=tmp)
    np.add(tmp, epsilon, out=tmp)
    return grad


def adam_apply(first: Any, denominator: Any, step_size: Any, update: Any, target: Any, decay: Any) -> None:
    """``target = target * decay + (first * step_size) / denominator`` in place (``decay`` None: no decay)."""
    if _loops is None or _loops.adam_apply(first, denominator, step_size, update, target,
                                           decay) is NotImplemented:
        numpy_adam_apply(first, denominator, step_size, update, target, decay)


def numpy_adam_apply(first: Any, denominator: Any, step_size: Any, update: Any, target: Any, decay: Any) -> None:
    """:func:`adam_apply` in NumPy passes (float32 buffers or not)."""
    import numpy as np

    np.multiply(first, step_size, out=update)
    np.divide(update, denominator, out=update)
    if decay is not None:
        np.multiply(target, decay, out=target)
    np.add(target, update, out=target)


def adam_bucket(grad: Any, first: Any, second: Any, maximum: Any, tmp: Any, update: Any, maximize: bool,
                scalars: tuple[Any, Any, Any, Any, Any], targets: list[Any], offsets: list[int],
                factors: list[tuple[Any, Any]], chunk: int) -> bool:
    """Adam over a whole flat bucket in one C call, where the loops are built; return False (nothing done) elsewhere.

    Chunk by chunk (``chunk`` elements): :func:`adam_moments` (the gradient negated into ``update`` when
    ``maximize``), then :func:`adam_apply` over each target's part of the chunk: the calls the caller's own loop
    makes, the same bits.

    Args:
        grad, first, second: the bucket's gradient and moments (flat float32, updated in place).
        maximum: ``max_exp_avg_sq`` flat (amsgrad), or None.
        tmp, update: work memory of at least a chunk (or the bucket, when smaller).
        maximize: descend on ``-grad``.
        scalars: as for :func:`adam_moments`.
        targets: each parameter's flat float32 memory, in buffer order.
        offsets: where each starts in the bucket (consecutive, from 0, covering it).
        factors: each one's ``(step_size, decay or None)``, as for :func:`adam_apply`.
        chunk: elements per chunk.
    """
    return _BUCKET is not None and _BUCKET(grad, first, second, maximum, tmp, update, maximize, *scalars, targets,
                                           offsets, factors, chunk) is not NotImplemented


# -- the linear layers' GEMMs (compat/fast_matmul.py): MindSpore's CPU MatMul in place, OpenBLAS through NumPy -------

def matmul(left: Any, right: Any, out: Any) -> None:
    """``out = left @ right``: ``left`` ``[..., k]``, ``right`` ``[k, n]``, ``out`` a contiguous float32 array of
    the product's shape. Leading dimensions of ``left`` are folded into one GEMM (a view where they are contiguous,
    else a copy); a plain or transposed 2-D layout is read in place (BLAS's transpose flag), any other is copied
    first (NumPy's matmul would otherwise loop element by element). Products of fewer than
    :data:`~.blas_threads.ONE_THREAD_PRODUCT` multiply-adds run on one OpenBLAS thread, larger ones on all
    (:mod:`.blas_threads`; the count is a function of the shape: OpenBLAS's bits may differ between counts, by
    float32 rounding, on some CPUs: an AVX2-only AMD EPYC)."""
    import numpy as np

    if left.ndim > 2:
        left = left.reshape(-1, left.shape[-1])
        out = out.reshape(-1, out.shape[-1])
    threads = blas_threads.openblas_threads()
    if threads is not None:
        wanted = 1 if left.shape[0] * left.shape[1] * right.shape[1] < blas_threads.ONE_THREAD_PRODUCT \
            else threads.largest
        if wanted != threads.current:
            threads.use(wanted)
    np.matmul(_blas_layout(left), _blas_layout(right), out=out)


def _blas_layout(matrix: Any) -> Any:
    """``matrix`` where BLAS reads it as it is (unit stride along one dimension), else a contiguous copy."""
    import numpy as np

    rows, columns = matrix.shape
    row_stride, column_stride = matrix.strides
    size = matrix.itemsize
    if (column_stride == size and row_stride >= columns * size) or (row_stride == size
                                                                    and column_stride >= rows * size):
        return matrix
    return np.ascontiguousarray(matrix)
