"""mindspeed_ms.compat.float64_scalars on real MindSpore tensors: which calls it rewrites (the results are compared
with real PyTorch by tests/conformance/cases/ops_float64_scalars.py), with and without the C pass-through wrappers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

mindspore = pytest.importorskip("mindspore")

from mindspeed_ms.compat import float64_scalars  # noqa: E402
from mindspeed_ms.engine import passthrough  # noqa: E402


@pytest.fixture(params=[False, True], ids=["python", "compiled"])
def compiled(request: pytest.FixtureRequest) -> Any:
    if request.param and not passthrough.has_accelerator():
        pytest.skip("the pass-through C extension is not built")
    with passthrough.accelerator(request.param):
        yield request.param


def _recorder() -> tuple[list, Any]:
    calls: list = []

    def op(*args: Any, **kwargs: Any) -> str:
        calls.append((args, kwargs))
        return "op"

    return calls, op


def test_python_floats_next_to_a_float64_tensor_become_float64_tensors(compiled: bool) -> None:
    calls, op = _recorder()
    wrapped = float64_scalars.float64_scalar_wrapper(op)
    x = mindspore.Tensor(np.array([1.0, 2.0]), mindspore.float64)
    assert wrapped(x, 0.1, min=0.2, dim=1) == "op"
    (args, kwargs), = calls
    assert args[0] is x
    assert args[1].dtype == mindspore.float64
    assert args[1].asnumpy().item() == 0.1
    assert kwargs["min"].asnumpy().item() == 0.2
    assert kwargs["dim"] == 1


def test_other_dtypes_and_non_float_arguments_pass_untouched(compiled: bool) -> None:
    calls, op = _recorder()
    wrapped = float64_scalars.float64_scalar_wrapper(op)
    x32 = mindspore.Tensor(np.array([1.0]), mindspore.float32)
    x64 = mindspore.Tensor(np.array([1.0]), mindspore.float64)
    wrapped(x32, 0.1)
    wrapped(x64, 2, True, x32)
    assert calls[0] == ((x32, 0.1), {})
    assert calls[1][0][1:] == (2, True, x32)
