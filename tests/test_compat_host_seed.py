"""mindspeed_ms.compat.host_seed: a scalar float32 output's implicit gradient (1.0) written on the host; every other
case left to MSAdapter (values and refusals against PyTorch: tests/conformance/cases/backward_seed.py)."""

from __future__ import annotations

from typing import Any

import mindspore
import numpy as np
import pytest

from mindspeed_ms.compat.host_seed import make_grads_wrapper, one_like


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_a_one_element_float32_output_gets_a_new_float32_one_of_its_shape(shape: tuple) -> None:
    output = mindspore.Tensor(np.full(shape, 7.5, np.float32))
    one = one_like(output)
    assert one is not output
    assert one.dtype == mindspore.float32
    assert tuple(one.shape) == shape
    np.testing.assert_array_equal(one.asnumpy(), np.ones(shape, np.float32))


@pytest.mark.parametrize("values", [np.zeros((2,), np.float32), np.zeros((), np.float64), np.zeros((), np.float16),
                                    np.zeros((0,), np.float32)])
def test_other_outputs_are_left_to_msadapter(values: np.ndarray) -> None:
    assert one_like(mindspore.Tensor(values)) is None


def test_the_wrapper_fills_only_missing_gradients_it_can_and_hands_the_rest_on() -> None:
    seen: list[tuple[Any, ...]] = []

    def make_grads(outputs: Any, grads: Any, is_grads_batched: bool) -> Any:  # stands in for MSAdapter's
        seen.append(tuple(grads))
        return tuple(grads)

    wrapped = make_grads_wrapper(make_grads)
    scalar = mindspore.Tensor(np.float32(2.0))
    vector = mindspore.Tensor(np.zeros((2,), np.float32))
    given = mindspore.Tensor(np.float32(3.0))
    grads = wrapped((scalar, vector, scalar), (None, None, given), False)
    np.testing.assert_array_equal(grads[0].asnumpy(), 1.0)
    assert grads[1] is None  # MSAdapter raises PyTorch's "grad can be implicitly created only for scalar outputs"
    assert grads[2] is given
    wrapped((scalar,), (None,), True)  # batched gradients: MSAdapter's own path
    assert seen[-1] == (None,)
