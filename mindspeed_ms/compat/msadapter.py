"""Replacements for MSAdapter behaviour that differs from PyTorch on every MindSpore device."""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["seed_mindspore_wrapper", "full_dtype_wrapper"]


def seed_mindspore_wrapper(manual_seed: Callable[..., Any]) -> Callable[..., Any]:
    """Make MSAdapter's ``torch.manual_seed`` also seed MindSpore's global RNG (and so NumPy's).

    MSAdapter's ``manual_seed`` only reseeds its default generator. Its ``torch.nn.init`` functions
    draw through ``mindspore.common.initializer`` (NumPy's global RNG) and, off Ascend, its random
    ops draw from MindSpore's global seed, so ``torch.manual_seed(s)`` leaves model initialisation
    and ``torch.randn`` unseeded: two processes with the same seed build different models.

    Args:
        manual_seed: MSAdapter's ``manual_seed``.

    Returns:
        ``manual_seed`` that also calls ``mindspore.set_seed`` with the same seed.
    """

    @functools.wraps(manual_seed)
    def seeded_manual_seed(seed: int) -> Any:
        generator = manual_seed(seed)
        import mindspore

        # mindspore.set_seed accepts 0 <= seed < 2**32 only, while torch takes any 64-bit seed.
        mindspore.set_seed(int(seed) % (1 << 32))
        return generator

    return seeded_manual_seed


def full_dtype_wrapper(full: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``torch.full`` PyTorch's result dtype when none is asked for.

    MSAdapter's ``full((2,), 7.0)`` is int64 on MindSpore's CPU backend (and ``full((2,), True)`` too);
    PyTorch infers it from the fill value: bool, int64, the default float dtype (float32), complex64,
    or a tensor fill value's own dtype. A float32 receive of such a tensor then fails ("Recv failed"),
    and arithmetic silently truncates.

    Args:
        full: MSAdapter's ``full(size, fill_value, *, out=None, dtype=None, ...)``.

    Returns:
        ``full`` that passes the inferred ``dtype`` when the caller gave none.
    """

    @functools.wraps(full)
    def full_with_pytorch_dtype(size: Any, fill_value: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        if dtype is None:
            import torch

            if isinstance(fill_value, bool):
                dtype = torch.bool
            elif isinstance(fill_value, int):
                dtype = torch.int64
            elif isinstance(fill_value, float):
                dtype = torch.get_default_dtype()
            elif isinstance(fill_value, complex):
                dtype = torch.complex64
            else:
                dtype = getattr(fill_value, "dtype", None)  # a 0-d tensor or NumPy scalar keeps its own
        return full(size, fill_value, *args, dtype=dtype, **kwargs)

    return full_with_pytorch_dtype
