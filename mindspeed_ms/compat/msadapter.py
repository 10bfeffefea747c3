"""Replacements for MSAdapter behaviour that differs from PyTorch on every MindSpore device."""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["seed_mindspore_wrapper"]


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
