"""mindspeed_ms.compat.empty_operands: which calls it takes (the product's shape, the sections of a split) and that
every other call reaches the op untouched. The values and gradients are compared with real PyTorch by the
conformance cases (tests/conformance/cases/ops_empty_operands.py), which run MSAdapter in a child interpreter."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from mindspeed_ms.compat import empty_operands


class Shaped:
    """An operand with a shape only (the wrappers read nothing else before deciding)."""

    def __init__(self, *shape: int) -> None:
        self.shape = shape


SHAPES = [(0,), (3,), (0, 2), (2, 0), (3, 2), (2, 3), (1, 2, 0), (2, 0, 3), (4, 3, 2), (2, 1, 0, 3), (0, 2, 2)]


@pytest.mark.parametrize(("a", "b"), list(itertools.product(SHAPES, SHAPES)))
def test_product_shape_is_numpys_matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    try:
        expected: Any = np.matmul(np.ones(a), np.ones(b)).shape
    except ValueError:
        expected = None
    assert empty_operands.product_shape(a, b) == expected


def test_non_empty_operands_and_extra_arguments_reach_the_op_untouched() -> None:
    calls: list = []

    def op(*args: Any, **kwargs: Any) -> str:
        calls.append((args, kwargs))
        return "op"

    product = empty_operands.empty_product_wrapper(op)
    a, b = Shaped(2, 3), Shaped(3, 4)
    assert product(a, b) == "op"
    assert calls.pop() == ((a, b), {})
    empty = Shaped(2, 0)
    assert product(empty, Shaped(0, 4), out="buffer") == "op"  # out=: not taken
    assert calls.pop()[1] == {"out": "buffer"}
    assert product(empty, Shaped(5, 4)) == "op"  # they do not multiply: the op raises PyTorch's error
    linear = empty_operands.empty_linear_wrapper(op)
    weight = Shaped(4, 3)
    assert linear(a, weight, "bias") == "op"
    assert calls.pop() == ((a, weight, "bias"), {})
    assert linear(Shaped(2, 0), Shaped(4, 5)) == "op"  # they do not multiply: the op raises PyTorch's error
    assert [operand.shape for operand in calls.pop()[0][:2]] == [(2, 0), (4, 5)]


def test_split_takes_only_sequences_of_sections_with_a_zero() -> None:
    calls: list = []

    def op(*args: Any, **kwargs: Any) -> str:
        calls.append((args, kwargs))
        return "op"

    split = empty_operands.empty_sections_split_wrapper(op)
    tensor = Shaped(4, 2)
    for args, kwargs in (((2,), {}), (([1, 3],), {}), (([0, 4],), {"dim": 5}), (([0, 3],), {}),
                         (([0, 2],), {"dim": 1, "extra": 1}), ((), {"split_size": [1, 3]})):
        assert split(tensor, *args, **kwargs) == "op"
        assert calls.pop() == ((tensor, *args), kwargs)
