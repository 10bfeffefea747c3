"""mindspeed_ms.compat.msadapter: torch.manual_seed also seeds MindSpore (and NumPy through it)."""

from __future__ import annotations

import mindspore
import numpy as np

from mindspeed_ms.compat.msadapter import seed_mindspore_wrapper


def test_seeded_manual_seed_calls_the_original_and_returns_its_generator() -> None:
    calls: list = []

    def manual_seed(seed: int) -> str:
        calls.append(seed)
        return "generator"

    assert seed_mindspore_wrapper(manual_seed)(42) == "generator"
    assert calls == [42]


def test_seeded_manual_seed_makes_numpy_and_mindspore_draws_repeat() -> None:
    seeded = seed_mindspore_wrapper(lambda seed: None)
    seeded(1234)
    first = (np.random.rand(3), mindspore.get_seed())
    seeded(1234)
    second = (np.random.rand(3), mindspore.get_seed())
    np.testing.assert_array_equal(first[0], second[0])
    assert first[1] == second[1] == 1234


def test_seeded_manual_seed_accepts_64_bit_seeds() -> None:
    seeded = seed_mindspore_wrapper(lambda seed: None)
    seeded((1 << 40) + 7)
    assert mindspore.get_seed() == ((1 << 40) + 7) % (1 << 32)
