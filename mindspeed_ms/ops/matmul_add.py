"""In-place float32 weight-gradient accumulation: MindSpeed's ``npu_matmul_add_fp32`` and torch_npu's grouped
``npu_groupmatmul_add_fp32`` (MoE experts' weights under ``--gemm-gradient-accumulation-fusion``)."""

from __future__ import annotations

import functools
from typing import Any

import mindspore
import numpy as np
from mindspore import Tensor, mint, ops

from mindspeed_ms.ops._validate import OpArgumentError, require_float, require_ndim, shape_of, upcast

__all__ = ["npu_groupmatmul_add_fp32", "npu_matmul_add_fp32"]

_OP = "npu_matmul_add_fp32"


def npu_matmul_add_fp32(total_input: Tensor, grad_output: Tensor, grad: Tensor) -> Tensor:
    """Accumulate ``grad += grad_output^T @ total_input`` in float32, in place.

    Leading dimensions of 3-D inputs are flattened (``(s, b, k) -> (s*b, k)``), as in
    gradient-accumulation-fusion. Zero-sized inputs leave ``grad`` unchanged. The update is
    written with ``copy_`` because ``add_`` silently returns a new tensor on MindSpore's CPU backend.
    MindSpore's fused ``InplaceMatmulAdd`` runs in graph mode only, so this is always a composite.

    Args:
        total_input: ``(n, k)`` or ``(s, b, k)`` activations, float16/bfloat16/float32.
        grad_output: ``(n, m)`` or ``(s, b, m)`` output gradients, same leading shape.
        grad: ``(m, k)`` float32 accumulator (e.g. a ``main_grad`` buffer), updated in place.

    Returns:
        ``grad`` itself, after the update.

    Raises:
        TypeError: if an input is not a float tensor or ``grad`` is not float32.
        ValueError: if the shapes do not fit together.
    """
    require_float(_OP, "total_input", total_input)
    require_float(_OP, "grad_output", grad_output)
    require_float(_OP, "grad", grad, (mindspore.float32,))
    require_ndim(_OP, "total_input", total_input, (2, 3))
    require_ndim(_OP, "grad_output", grad_output, (total_input.ndim,), f"{total_input.ndim}-D like total_input")
    ts, gos, gs = shape_of(total_input), shape_of(grad_output), shape_of(grad)
    if ts[:-1] != gos[:-1]:
        raise OpArgumentError(_OP, "grad_output", f"expected leading shape {ts[:-1]} (as total_input), got shape {gos}")
    if gs != (gos[-1], ts[-1]):
        raise OpArgumentError(_OP, "grad", f"expected shape {(gos[-1], ts[-1])}, got {gs}")
    if 0 in ts or 0 in gos:
        return grad
    x, dy = upcast(total_input), upcast(grad_output)
    if len(ts) == 3:
        x, dy = x.reshape(-1, ts[-1]), dy.reshape(-1, gos[-1])
    grad.copy_(grad + _matmul_tn()(dy, x))
    return grad


@functools.lru_cache(maxsize=1)
def _matmul_tn() -> ops.MatMul:
    # MatMul with transpose_a reads dy transposed in place of launching a separate transpose.
    return ops.MatMul(transpose_a=True)


def npu_groupmatmul_add_fp32(x: Tensor, dy: Tensor, group_list: Any, grad: Tensor) -> Tensor:
    """Accumulate the grouped weight gradient ``grad += stack_g(x_g^T @ dy_g)`` in float32, in place.

    ``x_g``/``dy_g`` are rows ``group_list[g-1]:group_list[g]`` of ``x``/``dy`` (tokens sorted by expert, the
    cumulative ends as ``npu_gmm`` takes them); ``grad`` holds the ``(groups, k, n)`` gradients in any shape of that
    many elements (the experts' ``main_grad``, e.g. ``(k, groups * n)`` memory viewed as ``(groups, k, n)``, as the
    fused kernel writes it). An empty group adds nothing.

    Args:
        x: ``(m, k)`` activations, float16/bfloat16/float32.
        dy: ``(m, n)`` output gradients.
        group_list: cumulative end offsets, one per group, ending at ``m`` (list of ints or 1-D int tensor).
        grad: float32 accumulator of ``groups * k * n`` elements, updated in place.

    Returns:
        ``grad`` itself, after the update.

    Raises:
        TypeError: a non-float input, ``grad`` not float32, or a ``group_list`` that is not integers.
        ValueError: shapes that do not fit, or offsets that are not non-decreasing ending at ``m``.
    """
    from mindspeed_ms.ops.gmm import host_ints

    op = "npu_groupmatmul_add_fp32"
    require_float(op, "x", x)
    require_float(op, "dy", dy)
    require_float(op, "grad", grad, (mindspore.float32,))
    require_ndim(op, "x", x, (2,), "a 2-D (tokens, k) tensor")
    require_ndim(op, "dy", dy, (2,), "a 2-D (tokens, n) tensor")
    (m, k), (dm, n) = shape_of(x), shape_of(dy)
    if dm != m:
        raise OpArgumentError(op, "dy", f"expected {m} rows as x, got shape {(dm, n)}")
    ends = host_ints(op, group_list)
    groups = ends.size
    if int(np.prod(shape_of(grad))) != groups * k * n:
        raise OpArgumentError(op, "grad", f"expected {groups} * {k} * {n} elements ({groups} groups of x's k and dy's "
                                          f"n), got shape {shape_of(grad)}")
    if groups and (ends[0] < 0 or np.any(np.diff(ends) < 0) or int(ends[-1]) != m):
        raise OpArgumentError(op, "group_list", f"expected non-decreasing offsets ending at the token count {m}, "
                                                f"got {ends.tolist()}")
    # the kernel writes the accumulator outside autograd: the activations MindSpeed's fb-overlap keeps for the
    # deferred weight gradient may still record a graph, the update must not
    xf, dyf = ops.stop_gradient(upcast(x)), ops.stop_gradient(upcast(dy))
    parts, start = [], 0
    for end in (int(e) for e in ends):
        parts.append(_matmul_tn()(xf[start:end], dyf[start:end]) if end > start else
                     ops.zeros((k, n), mindspore.float32))
        start = end
    if parts:
        grad.copy_(grad + mint.cat([p.reshape(1, k, n) for p in parts]).reshape(shape_of(grad)))
    return grad
