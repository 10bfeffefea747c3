"""Rotary position embedding with torch_npu's ``npu_rotary_position_embedding`` signature."""

from __future__ import annotations

from mindspore import Tensor, mint, ops

from mindspeed_ms.ops._dispatch import dispatch_path
from mindspeed_ms.ops._validate import OpArgumentError, require_float, require_ndim, shape_of, upcast

__all__ = ["npu_rotary_position_embedding"]

_OP = "npu_rotary_position_embedding"
_MODES = {0: "rotate-half", 1: "interleaved"}


def _rotate(x: Tensor, mode: int) -> Tensor:
    if mode == 0:
        x1, x2 = mint.chunk(x, 2, -1)
        return mint.cat((-x2, x1), -1)
    shape = shape_of(x)
    pairs = x.reshape(shape[:-1] + (shape[-1] // 2, 2))
    even, odd = mint.chunk(pairs, 2, -1)
    return mint.cat((-odd, even), -1).reshape(shape)


def npu_rotary_position_embedding(x: Tensor, cos: Tensor, sin: Tensor, mode: int = 0) -> Tensor:
    """Rotate ``x`` by the angles whose cosines and sines are ``cos`` and ``sin``.

    ``y = x * cos + rotate(x) * sin``, where ``rotate`` is rotate-half (mode 0, GPT-NeoX style:
    ``cat(-x2, x1)``) or interleaved (mode 1, GPT-J style: pairs ``(x0, x1) -> (-x1, x0)``).
    ``x`` is 4-D in any of the layouts BSND, SBND, BNSD; ``cos``/``sin`` are 4-D with the same
    head dimension and broadcast against ``x`` (e.g. ``1S1D`` for BSND, ``S11D`` for SBND).
    On Ascend this calls ``ops.rotary_position_embedding`` when all three share a dtype;
    elsewhere a composite of ``mint`` primitives, in float32 for half inputs.

    Args:
        x: float16/bfloat16/float32 tensor of 4 dimensions, last dimension even.
        cos: cosines, broadcastable to ``x``.
        sin: sines, same shape as ``cos``.
        mode: 0 (rotate-half) or 1 (interleaved).

    Returns:
        A tensor of ``x``'s shape and dtype.

    Raises:
        TypeError: if an input is not a float tensor.
        ValueError: on an unknown mode, a non-4-D input, an odd head dimension, or ``cos``/``sin``
            shapes that do not broadcast to ``x``.
    """
    if isinstance(mode, bool) or mode not in _MODES:
        raise OpArgumentError(_OP, "mode", f"expected 0 (rotate-half) or 1 (interleaved), got {mode!r}")
    require_float(_OP, "x", x)
    require_float(_OP, "cos", cos)
    require_float(_OP, "sin", sin)
    require_ndim(_OP, "x", x, (4,), "a 4-D tensor in layout BSND, SBND or BNSD")
    xs, cs = shape_of(x), shape_of(cos)
    if xs[-1] % 2:
        raise OpArgumentError(_OP, "x", f"expected an even head dimension, got shape {xs}")
    if len(cs) != 4 or cs[-1] != xs[-1] or any(c not in (1, d) for c, d in zip(cs, xs)):
        raise OpArgumentError(
            _OP, "cos", f"expected a 4-D shape broadcastable to x {xs} with last dim {xs[-1]}, got {cs}"
        )
    if shape_of(sin) != cs:
        raise OpArgumentError(_OP, "sin", f"expected the shape of cos {cs}, got {shape_of(sin)}")
    if dispatch_path("rotary_position_embedding") == "fused" and x.dtype == cos.dtype == sin.dtype:
        return ops.rotary_position_embedding(x, cos, sin, mode)
    xf = upcast(x)
    y = xf * upcast(cos) + _rotate(xf, mode) * upcast(sin)
    return y if y.dtype == x.dtype else y.astype(x.dtype)
