"""mindspeed_ms.compat.msadapter_cpu: in-place fixes and wrappers for MindSpore's CPU backend."""

from __future__ import annotations

from typing import Any

import mindspore
import numpy as np
import pytest

from mindspeed_ms.compat import msadapter_cpu as compat


def _tensor(values: Any) -> mindspore.Tensor:
    return mindspore.Tensor(np.asarray(values, dtype=np.float32))


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "expected"),
    [
        ("zero_", (), {}, [0.0, 0.0, 0.0]),
        ("add_", (2.0,), {}, [3.0, 4.0, 5.0]),
        ("add_", (_tensor([1.0, 1.0, 1.0]),), {"alpha": 3}, [4.0, 5.0, 6.0]),
        ("sub_", (_tensor([1.0, 1.0, 1.0]),), {}, [0.0, 1.0, 2.0]),
        ("sub_", (1.0,), {"alpha": 2}, [-1.0, 0.0, 1.0]),
        ("mul_", (_tensor([2.0, 3.0, 4.0]),), {}, [2.0, 6.0, 12.0]),
        ("div_", (2.0,), {}, [0.5, 1.0, 1.5]),
        ("div_", (2.0,), {"rounding_mode": "floor"}, [0.0, 1.0, 1.0]),
        ("exp_", (), {}, list(np.exp([1.0, 2.0, 3.0]))),
        ("masked_fill_", (mindspore.Tensor(np.array([True, False, True])), -1.0), {}, [-1.0, 2.0, -1.0]),
    ],
)
def test_inplace_replacement_updates_self_and_returns_it(method: str, args: tuple, kwargs: dict,
                                                         expected: list) -> None:
    tensor = _tensor([1.0, 2.0, 3.0])
    result = getattr(compat, method)(tensor, *args, **kwargs)
    assert result is tensor
    np.testing.assert_allclose(tensor.asnumpy(), expected, rtol=1e-6)


def test_inplace_replacement_keeps_the_tensor_dtype() -> None:
    tensor = mindspore.Tensor(np.array([1, 2, 3], dtype=np.int32))
    compat.mul_(tensor, 2)
    assert tensor.dtype == mindspore.int32
    np.testing.assert_array_equal(tensor.asnumpy(), [2, 4, 6])


def test_cpu_device_wrapper_moves_accelerator_devices_to_cpu() -> None:
    seen: list = []

    def empty(*size: int, device: Any = None, dtype: Any = None) -> tuple:
        seen.append(device)
        return size, dtype

    class Device:
        def __init__(self, kind: str) -> None:
            self.type = kind

    empty_on_cpu = compat.cpu_device_wrapper(empty)
    assert empty_on_cpu(2, 3, device="Ascend", dtype="f32") == ((2, 3), "f32")
    empty_on_cpu(4, device=Device("cuda"))
    cpu = Device("cpu")
    empty_on_cpu(4, device=cpu)
    empty_on_cpu(4, device="CPU")
    empty_on_cpu(4)
    assert seen == ["cpu", "cpu", cpu, "CPU", None]
    assert empty_on_cpu.__wrapped__ is empty  # type: ignore[attr-defined]


@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 3, 4)])
def test_frobenius_norm_wrapper_matches_numpy_for_any_rank(shape: tuple) -> None:
    values = np.random.default_rng(0).standard_normal(shape).astype(np.float32)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the default Frobenius norm must not reach the wrapped norm")

    norm = compat.frobenius_norm_wrapper(refuse)
    np.testing.assert_allclose(norm(mindspore.Tensor(values)).asnumpy(), np.linalg.norm(values.ravel()),
                               rtol=1e-5)
    kept = norm(mindspore.Tensor(values), keepdim=True)
    assert tuple(kept.shape) == (1,) * len(shape)


def test_frobenius_norm_wrapper_passes_other_norms_through() -> None:
    calls: list = []

    def norm(input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
             dtype: Any = None) -> str:
        calls.append((p, dim, keepdim))
        return "original"

    wrapped = compat.frobenius_norm_wrapper(norm)
    assert wrapped(_tensor([[3.0, 4.0]]), "nuc") == "original"
    assert wrapped(_tensor([[3.0, 4.0]]), "fro", dim=1) == "original"
    assert wrapped(_tensor([[3.0, 4.0]]), 2, dim=0) == "original"
    assert calls == [("nuc", None, False), ("fro", 1, False), (2, 0, False)]


def test_norm_with_a_number_and_no_dim_flattens_a_matrix_as_pytorch() -> None:
    wrapped = compat.frobenius_norm_wrapper(lambda *args, **kwargs: "original")
    matrix = _tensor([[3.0, 4.0], [1.0, 2.0]])
    assert float(wrapped(matrix, 2)) == pytest.approx(30 ** 0.5)  # not the spectral norm (5.465)
    assert float(wrapped(matrix, 1)) == pytest.approx(10.0)
    assert float(wrapped(matrix, float("inf"))) == pytest.approx(4.0)


def test_frobenius_norm_wrapper_writes_out() -> None:
    out = _tensor(0.0)
    result = compat.frobenius_norm_wrapper(lambda *a, **k: None)(_tensor([3.0, 4.0]), out=out)
    assert result is out
    assert float(out.asnumpy()) == pytest.approx(5.0)


@pytest.mark.parametrize(("given", "used"), [("nccl", "gloo"), ("HCCL", "gloo"), (None, "gloo"),
                                             ("gloo", "gloo"), ("mpi", "mpi")])
def test_cpu_backend_wrapper_runs_accelerator_backends_on_gloo(given: Any, used: str) -> None:
    calls: list = []

    def init_process_group(backend: Any = None, init_method: Any = None, **kwargs: Any) -> None:
        calls.append((backend, init_method, kwargs))

    compat.cpu_backend_wrapper(init_process_group)(given, "env://", world_size=2)
    assert calls == [(used, "env://", {"world_size": 2})]


def test_no_accelerator_reports_false() -> None:
    assert compat.no_accelerator() is False


def test_the_cpu_backends_current_stream_synchronizes_and_is_one_stream() -> None:
    """MindSpeed's alltoall_seq dispatcher: ``torch.cuda.current_stream().synchronize()`` (MSAdapter's is None)."""
    stream = compat.current_stream()
    assert stream.synchronize() is None
    assert stream.query() is True
    assert stream == compat.current_stream("cuda:0")
    assert stream != object()
    assert len({stream, compat.current_stream()}) == 1
    stream.wait_stream(compat.current_stream())
