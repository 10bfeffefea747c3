"""mindspeed_ms.compat.tensor_identity: Tensor.to / cpu identity rules and accelerator requests on the CPU backend."""

from __future__ import annotations

from typing import Any

import pytest

from mindspeed_ms.compat import tensor_identity


class _Device:
    """Shaped like torch.device: a class named ``device`` with a string ``type``."""

    def __init__(self, kind: str) -> None:
        self.type = kind


_Device.__name__ = "device"


class _DType:
    """Shaped like a dtype (MindSpore's ``Float`` type): not a string, no string ``type``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _DType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


F16, F32, F64 = _DType("float16"), _DType("float32"), _DType("float64")


class _Tensor:
    def __init__(self, dtype: _DType = F32) -> None:
        self.dtype = dtype
        self.shape = (2,)


def _recording_to(seen: list) -> Any:
    def to(self: _Tensor, *args: Any, **kwargs: Any) -> _Tensor:
        seen.append((args, kwargs))
        return _Tensor(kwargs.get("dtype") or next((a for a in args if isinstance(a, _DType)), self.dtype))

    return to


@pytest.mark.parametrize(("args", "kwargs", "expected_args", "expected_kwargs"), [
    ((), {"device": "Ascend"}, (), {"device": "cpu"}),           # torch.cuda.current_device() under MSAdapter
    (("cuda",), {}, ("cpu",), {}),
    (("npu:1",), {}, ("cpu",), {}),
    ((0,), {}, ("cpu",), {}),
    ((_Device("cuda"),), {}, ("cpu",), {}),
    (("cuda", F16), {}, ("cpu", F16), {}),
    ((), {"device": "npu", "dtype": F64}, (), {"device": "cpu", "dtype": F64}),
    ((F16,), {}, (F16,), {}),                                      # a dtype is not a device
    ((), {"device": "cpu"}, (), {"device": "cpu"}),
    ((True,), {}, (True,), {}),                                    # non_blocking, not an ordinal
    (("not-a-device",), {}, ("not-a-device",), {}),                # left for MSAdapter to refuse
])
def test_a_move_to_an_accelerator_stays_on_the_host(args: tuple, kwargs: dict, expected_args: tuple,
                                                     expected_kwargs: dict) -> None:
    seen: list = []
    tensor_identity.identity_to_wrapper(_recording_to(seen))(_Tensor(), *args, **kwargs)
    assert seen == [(expected_args, expected_kwargs)]


def test_to_without_a_change_returns_the_tensor_itself_and_a_dtype_change_a_new_one() -> None:
    to = tensor_identity.identity_to_wrapper(_recording_to([]))
    tensor = _Tensor()
    assert to(tensor, device="Ascend") is tensor
    converted = to(tensor, F16)
    assert converted is not tensor
    assert converted.dtype == F16
