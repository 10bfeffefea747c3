"""``F.pad`` in its reflect, replicate and circular modes as PyTorch (scripts/opinfo_sweep.py; cases in
tests/conformance/cases/fix_pad_modes.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13:

- ``mode='replicate'`` always raised ``ValueError: For 'pad', the padding mode 'replicate' can not set value, but got
  value 0.0`` (MSAdapter passes its default ``value=0.0`` on to MindSpore);
- ``mode='reflect'`` of a 5-d input (3 padded dims: PyTorch's ReflectionPad3d) raised PadV3's "input dims for reflect
  mode must be less than or equal to 4";
- PyTorch's refusals (a pad length for which the input has the wrong rank, a reflect pad as large as the dimension,
  a circular pad wrapping more than once, a value with a non-constant mode, an unknown mode) came as MindSpore's
  ValueError, or not at all.

Here the three modes are index selections, one ``index_select`` a padded dimension with the positions each mode reads
(reflect: mirrored without the edge; replicate: clamped; circular: modulo the size, around what a negative pad
left); negative pads crop, as PyTorch.
The gradient is index_select's (each output position's gradient added into the input position it read), the same
sums as PyTorch's padding backward kernels. bfloat16 is selected in float32 (exact) and cast back. The constant mode
goes to MSAdapter's pad unchanged (``value=None`` meaning 0, as PyTorch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["pad_modes_wrapper"]

_MODES = ("reflect", "replicate", "circular")


def pad_modes_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.pad(input, pad, mode='constant', value=None)``: the non-constant modes computed as PyTorch's."""

    @functools.wraps(op)
    def pad(input: Any, pad: Any, mode: str = "constant", value: Any = None) -> Any:
        if mode == "constant":
            return op(input, pad, mode, 0.0 if value is None else value)
        return _padded(input, pad, mode, value)

    return pad


def _checked_pads(input: Any, pad: Any, mode: str, value: Any) -> list[int]:
    """PyTorch's checks of ``F.pad``'s arguments for a non-constant mode, in its order, with its messages."""
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    pads = [int(p.item()) if hasattr(p, "item") else int(p) for p in pad]
    ndim = len(input.shape)
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pads) > 2 * ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pads)} and input of dimension {ndim}")
    padded = len(pads) // 2
    if padded not in (1, 2, 3) or ndim not in (padded + 1, padded + 2):
        raise NotImplementedError(f"Padding size {len(pads)} is not supported for {ndim}D input tensor.")
    return pads


def _positions(size: int, left: int, right: int, mode: str, dim: int, shape: tuple[int, ...]
               ) -> Any:
    """The input positions the padded dimension's output reads, as an int64 NumPy array."""
    import numpy as np

    if size == 0:
        raise RuntimeError(f"Expected a non-zero size for padded dimension {dim} of input {list(shape)} "
                           f"(mode {mode!r})")
    wanted = np.arange(-left, size + right, dtype=np.int64)
    if mode == "replicate":
        return np.clip(wanted, 0, size - 1)
    if mode == "reflect":
        if left >= size or right >= size:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                               f"got: padding ({left}, {right}) at dimension {dim} of input {list(shape)}")
        mirrored = np.abs(wanted)
        return np.where(mirrored > size - 1, 2 * (size - 1) - mirrored, mirrored)
    if left > size or right > size:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    # a negative pad crops first; the positive ones wrap around what is left (PyTorch's order)
    start, stop = max(-left, 0), size - max(-right, 0)
    return start + np.mod(np.arange(-max(left, 0), stop - start + max(right, 0), dtype=np.int64), stop - start)


def _padded(input: Any, pad: Any, mode: str, value: Any) -> Any:
    import mindspore
    import msadapter

    pads = _checked_pads(input, pad, mode, value)
    shape = tuple(int(n) for n in input.shape)
    bfloat16 = input.dtype == mindspore.bfloat16
    result = input.float() if bfloat16 else input
    for i in range(len(pads) // 2):
        dim = len(shape) - 1 - i
        index = _positions(shape[dim], pads[2 * i], pads[2 * i + 1], mode, dim, shape)
        result = result.index_select(dim, msadapter.from_numpy(index))
    return result.to(mindspore.bfloat16) if bfloat16 else result
