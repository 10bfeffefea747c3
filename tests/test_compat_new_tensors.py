"""mindspeed_ms.compat.new_tensors: which new_zeros/new_ones calls it takes (0-d shapes only); the values are
compared with real PyTorch by the conformance cases (tests/conformance/cases/ops_create.py: new_zeros_ones_zero_dim,
new_full), which run MSAdapter in a child interpreter."""

from __future__ import annotations

from typing import Any

import pytest

from mindspeed_ms.compat import new_tensors


@pytest.mark.parametrize("size", [(2, 3), ((2,),), ([4],), (0,), ((0, 2),)])
def test_shapes_that_are_not_zero_dim_reach_the_original_untouched(size: tuple[Any, ...]) -> None:
    calls: list = []

    def op(self: Any, *args: Any, **kwargs: Any) -> str:
        calls.append((self, args, kwargs))
        return "op"

    new = new_tensors.zero_dim_wrapper("zeros")(op)
    assert new("self", *size, dtype="d", device="cpu") == "op"
    assert calls == [("self", size, {"dtype": "d", "requires_grad": False, "device": "cpu"})]
