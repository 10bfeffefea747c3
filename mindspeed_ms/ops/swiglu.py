"""SwiGLU activation with torch_npu's ``npu_swiglu`` signature."""

from __future__ import annotations

from mindspore import Tensor, mint, ops

from mindspeed_ms.ops._dispatch import dispatch_path
from mindspeed_ms.ops._validate import OpArgumentError, require_float, shape_of, upcast

__all__ = ["npu_swiglu"]

_OP = "npu_swiglu"


def npu_swiglu(x: Tensor, dim: int = -1) -> Tensor:
    """Split ``x`` in two halves ``a, b`` along ``dim`` and return ``silu(a) * b``.

    On Ascend this calls ``ops.swiglu``; elsewhere a composite of ``mint`` primitives, computed in
    float32 for float16/bfloat16 inputs and cast back.

    Args:
        x: float16/bfloat16/float32 tensor whose size along ``dim`` is even.
        dim: the dimension to split.

    Returns:
        A tensor like ``x`` with half its size along ``dim``.

    Raises:
        TypeError: if ``x`` is not a float tensor or ``dim`` is not an int.
        ValueError: if ``dim`` is out of range or ``x``'s size along it is odd.
    """
    require_float(_OP, "x", x)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise OpArgumentError(_OP, "dim", f"expected an int, got {dim!r}")
    xs = shape_of(x)
    if not -len(xs) <= dim < len(xs):
        raise OpArgumentError(_OP, "dim", f"expected a dimension of x (shape {xs}), got {dim}")
    if xs[dim] % 2:
        raise OpArgumentError(_OP, "x", f"expected an even size along dim {dim}, got shape {xs}")
    if dispatch_path("swiglu") == "fused":
        return ops.swiglu(x, dim)
    a, b = mint.chunk(upcast(x), 2, dim)
    y = mint.nn.functional.silu(a) * b
    return y if y.dtype == x.dtype else y.astype(x.dtype)
