"""mindspeed_ms.compat.amp_scaling: PyTorch's argument checks, before anything is written (the values, found_inf and
the scale's updates are compared with real PyTorch by tests/conformance/cases/ops_amp.py, in child interpreters)."""

from __future__ import annotations

from typing import Any

import pytest

from mindspeed_ms.compat import amp_scaling
from mindspeed_ms.compat.errors import DTypeNotSupportedError, TorchRefusalError


class Fake:
    """A tensor's shape and dtype; any write fails the test."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "Float32") -> None:
        self.shape, self.dtype = shape, dtype

    def is_floating_point(self) -> bool:
        return self.dtype.startswith("Float")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AssertionError(f"{name} called: nothing may be read or written after a refusal")


@pytest.mark.parametrize(("found", "inv", "message"), [
    (Fake((2,)), Fake((1,)), "found_inf must be a 1-element tensor"),
    (Fake((1,), "Int32"), Fake((1,)), "found_inf must be a float tensor"),
    (Fake((1,)), Fake((1, 2)), "inv_scale must be a 1-element tensor"),
])
def test_unscale_refuses_found_inf_and_inv_scale_as_pytorch(found: Fake, inv: Fake, message: str) -> None:
    with pytest.raises(TorchRefusalError, match=message) as caught:
        amp_scaling.foreach_non_finite_check_and_unscale_([Fake((3,))], found, inv)
    assert isinstance(caught.value, RuntimeError)


def test_unscale_refuses_integer_gradients_with_not_implemented_error() -> None:
    with pytest.raises(DTypeNotSupportedError, match="not implemented for 'Int64'") as caught:
        amp_scaling.foreach_non_finite_check_and_unscale_([Fake((3,)), Fake((2,), "Int64")], Fake((1,)), Fake((1,)))
    assert isinstance(caught.value, NotImplementedError)


@pytest.mark.parametrize("tracker", [Fake((1,), "Int64"), Fake((1,), "Float32"), Fake((1,), "Bool")])
def test_update_scale_wants_an_int32_growth_tracker(tracker: Fake) -> None:
    with pytest.raises(TorchRefusalError, match="growth_tracker must be an int tensor"):
        amp_scaling.update_scale_(Fake((1,)), tracker, Fake((1,)), 2.0, 0.5, 10)
