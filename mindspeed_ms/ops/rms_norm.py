"""RMS normalisation with torch_npu's ``npu_rms_norm`` signature."""

from __future__ import annotations

import mindspore
from mindspore import Tensor, mint, ops

from mindspeed_ms.ops._dispatch import dispatch_path
from mindspeed_ms.ops._validate import OpArgumentError, require_float, shape_of, upcast

__all__ = ["npu_rms_norm"]

_OP = "npu_rms_norm"


def npu_rms_norm(x: Tensor, gamma: Tensor, epsilon: float = 1e-6) -> tuple[Tensor, Tensor]:
    """Normalise ``x`` by its root mean square over the trailing dimensions that ``gamma`` spans.

    ``y = x * rstd * gamma`` with ``rstd = 1 / sqrt(mean(x**2) + epsilon)``, the mean taken over the
    last ``gamma.ndim`` dimensions. On Ascend this calls ``ops.rms_norm`` (when ``x`` and ``gamma``
    share a dtype); elsewhere a float32 composite of ``mint`` primitives, cast back to ``x``'s dtype.

    Args:
        x: float16/bfloat16/float32 tensor of shape ``(..., *gamma.shape)``.
        gamma: scale with the shape of ``x``'s trailing dimensions.
        epsilon: added to the mean square, in (0, 1].

    Returns:
        ``(y, rstd)``: ``y`` like ``x``; ``rstd`` float32 with the reduced dimensions kept (size 1).

    Raises:
        TypeError: if ``x`` or ``gamma`` is not a float tensor.
        ValueError: if ``gamma``'s shape is not ``x``'s trailing shape, or ``epsilon`` is out of range.
    """
    require_float(_OP, "x", x)
    require_float(_OP, "gamma", gamma)
    xs, gs = shape_of(x), shape_of(gamma)
    if not 1 <= len(gs) <= len(xs) or xs[len(xs) - len(gs) :] != gs:
        raise OpArgumentError(_OP, "gamma", f"expected the trailing shape of x {xs}, e.g. {xs[-1:]}, got {gs}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0.0 < float(epsilon) <= 1.0:
        raise OpArgumentError(_OP, "epsilon", f"expected a float in (0, 1], got {epsilon!r}")
    if dispatch_path("rms_norm") == "fused" and x.dtype == gamma.dtype:
        y, rstd = ops.rms_norm(x, gamma, float(epsilon))
        return y, rstd
    dims = tuple(range(len(xs) - len(gs), len(xs)))
    xf = upcast(x)
    rstd = mint.rsqrt(mint.mean(xf * xf, dim=dims, keepdim=True) + float(epsilon))
    y = xf * rstd * upcast(gamma)
    if y.dtype != x.dtype:
        y = y.astype(x.dtype)
    if rstd.dtype != mindspore.float32:
        rstd = rstd.astype(mindspore.float32)
    return y, rstd
