"""In-place float32 weight-gradient accumulation with MindSpeed's ``npu_matmul_add_fp32`` signature."""

from __future__ import annotations

import functools

import mindspore
from mindspore import Tensor, ops

from mindspeed_ms.ops._validate import OpArgumentError, require_float, require_ndim, shape_of, upcast

__all__ = ["npu_matmul_add_fp32"]

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
