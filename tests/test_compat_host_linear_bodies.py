"""mindspeed_ms.compat._host_bodies: HostLinear's C bodies make the Python bodies' calls, in their order, with their
results, and refuse what they refuse (fakes for the tensors and the host functions; no MindSpore needed).

tests/test_compat_host_linear.py runs both bodies under MSAdapter against megatron on PyTorch.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from mindspeed_ms.compat import host_linear
from mindspeed_ms.compat.errors import TorchRefusalError


def test_the_c_bodies_are_built_by_the_install() -> None:
    assert host_linear.has_compiled_bodies(), \
        "mindspeed_ms.compat._host_bodies is missing: pip install -e . needs a C compiler"


class FakeTensor:
    """What the bodies read of a tensor: ``_version``, ``_shape``; its memory is ``array``."""

    def __init__(self, array: np.ndarray) -> None:
        self.array, self._version, self._shape = array, 0, list(array.shape)


class Host:
    """host_array / new_float32 / matmul / bias_add / column_sum over fakes, each call logged."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []

    def host_array(self, tensor: FakeTensor, sync: bool = True) -> np.ndarray:
        self.log.append(("host_array", id(tensor), sync))
        return tensor.array

    def new_float32(self, shape: tuple[int, ...]) -> tuple[FakeTensor, np.ndarray]:
        self.log.append(("new_float32", shape))
        tensor = FakeTensor(np.empty(shape, np.float32))
        return tensor, tensor.array

    def matmul(self, left: np.ndarray, right: np.ndarray, out: np.ndarray) -> None:
        self.log.append(("matmul", left.shape, right.shape, left.strides, right.strides, out.shape))
        np.matmul(left.reshape(-1, left.shape[-1]), right, out=out.reshape(-1, out.shape[-1]))

    def bias_add(self, values: np.ndarray, bias: np.ndarray, out: np.ndarray) -> None:
        self.log.append(("bias_add", values.shape, bias.shape))
        np.add(values, bias, out=out)

    def column_sum(self, rows: np.ndarray, out: np.ndarray) -> None:
        self.log.append(("column_sum", rows.shape))
        out[...] = rows.astype(np.float64).sum(axis=0)


def _bodies(monkeypatch: pytest.MonkeyPatch, host: Host, compiled: bool) -> tuple[Any, Any]:
    for name in ("host_array", "new_float32", "matmul", "bias_add", "column_sum"):
        monkeypatch.setattr(host_linear, name, getattr(host, name))
    return host_linear.bodies(compiled)


def _run(monkeypatch: pytest.MonkeyPatch, compiled: bool, bias: bool, needs: tuple[bool, bool, bool],
         input_shape: tuple[int, ...] = (5, 3, 4)) -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(3)
    input = FakeTensor(rng.standard_normal(input_shape).astype(np.float32))
    weight = FakeTensor(rng.standard_normal((6, input_shape[-1])).astype(np.float32))
    bias_tensor = FakeTensor(rng.standard_normal(6).astype(np.float32)) if bias else None
    grad = FakeTensor(rng.standard_normal((*input_shape[:-1], 6)).astype(np.float32))
    host = Host()
    forward, backward = _bodies(monkeypatch, host, compiled)
    ctx = SimpleNamespace(needs_input_grad=needs)
    result = forward(ctx, input, weight, bias_tensor)
    assert ctx.kept == (input, weight, 0, 0, bias)
    grads = backward(ctx, grad)
    assert not hasattr(ctx, "kept")
    named = {id(input): "input", id(weight): "weight", id(grad): "grad", id(bias_tensor): "bias"}
    log = [(kind, named.get(rest[0], rest[0]), *rest[1:]) if kind == "host_array" else (kind, *rest)
           for kind, *rest in host.log]
    values = [result.array] + [None if g is None else g.array for g in grads]
    return log, values


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("needs", [(True, True, True), (False, True, True), (True, False, False),
                                   (True, False, True), (False, False, False)])
@pytest.mark.parametrize("input_shape", [(5, 3, 4), (7, 4)])
def test_the_c_bodies_make_the_python_bodies_calls_with_their_results(monkeypatch: pytest.MonkeyPatch, bias: bool,
                                                                      needs: tuple[bool, bool, bool],
                                                                      input_shape: tuple[int, ...]) -> None:
    python_log, python_values = _run(monkeypatch, False, bias, needs, input_shape)
    c_log, c_values = _run(monkeypatch, True, bias, needs, input_shape)
    assert c_log == python_log
    assert len(c_values) == len(python_values) == 4
    for got, expected in zip(c_values, python_values):
        if expected is None:
            assert got is None
        else:
            np.testing.assert_array_equal(got, expected)
    assert python_values[0].shape == (*input_shape[:-1], 6)


@pytest.mark.parametrize("written", ["input", "weight"])
@pytest.mark.parametrize("compiled", [True, False])
def test_an_input_or_weight_written_after_the_forward_is_refused(monkeypatch: pytest.MonkeyPatch, written: str,
                                                                 compiled: bool) -> None:
    host = Host()
    forward, backward = _bodies(monkeypatch, host, compiled)
    tensors = {"input": FakeTensor(np.ones((2, 3), np.float32)), "weight": FakeTensor(np.ones((4, 3), np.float32))}
    ctx = SimpleNamespace(needs_input_grad=(True, True, False))
    forward(ctx, tensors["input"], tensors["weight"], None)
    tensors[written]._version += 1
    before = len(host.log)
    with pytest.raises(TorchRefusalError, match="modified by an inplace operation"):
        backward(ctx, FakeTensor(np.ones((2, 4), np.float32)))
    assert len(host.log) == before  # nothing computed


def test_the_c_object_checks_what_it_is_given() -> None:
    with pytest.raises(TypeError, match="column_sum must be callable"):
        host_linear.compiled_bodies(print, print, print, print, 3, print)  # type: ignore[arg-type]
    forward, backward = host_linear.compiled_bodies(print, print, print, print, print, lambda: None)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        forward(SimpleNamespace(), 1)
    with pytest.raises(TypeError, match="ctx.kept must be the forward's 5-tuple"):
        backward(SimpleNamespace(kept=(1, 2)), None)
    with pytest.raises(AttributeError):
        backward(SimpleNamespace(), None)
    tensor = FakeTensor(np.ones(2, np.float32))
    moved = FakeTensor(np.ones(2, np.float32))
    moved._version = 1
    with pytest.raises(RuntimeError, match="refuse\\(\\) returned instead of raising"):
        backward(SimpleNamespace(kept=(tensor, moved, 0, 0, False)), None)
    with pytest.raises(TypeError, match="autocast must be callable"):
        host_linear.compiled_linear_wrapper(print, print, "f32", print, None)  # type: ignore[arg-type]


class Meta:
    """What the wrapper's tests read of a tensor: ``_shape``, ``_dtype``, whether it is contiguous."""

    def __init__(self, shape: Any, dtype: str = "f32", contiguous: bool = True) -> None:
        self._shape, self._dtype, self.contiguous = shape, dtype, contiguous


def _megatron(*args: Any, **kwargs: Any) -> Any:
    """megatron's function as the wrappers call it: keywords only (a stand-in with its signature)."""
    def bind(input: Any, weight: Any, bias: Any, gradient_accumulation_fusion: Any, allreduce_dgrad: Any,
             sequence_parallel: Any, grad_output_buffer: Any = None, wgrad_deferral_limit: Any = 0,
             async_grad_allreduce: Any = None) -> dict[str, Any]:
        return dict(locals())
    return ("megatron", args, bind(*args, **kwargs))


def _wrappers(autocast: bool) -> tuple[Any, Any, list[Any]]:
    applied: list[Any] = []

    def apply(*tensors: Any) -> Any:
        applied.append(tensors)
        return ("ours", tensors)

    def contiguous(tensor: Meta) -> bool:
        return tensor.contiguous

    def enabled(device: str) -> bool:
        assert device == "cuda"
        return autocast

    python = host_linear.python_linear_wrapper(_megatron, apply, "f32", contiguous, enabled)
    compiled = host_linear.compiled_linear_wrapper(_megatron, apply, "f32", contiguous, enabled)
    return python, compiled, applied


_X, _W, _B = Meta((5, 3, 4)), Meta((6, 4)), Meta((6,))
_TENSOR_CASES = {
    "plain": (_X, _W, _B), "no bias": (Meta([7, 4]), _W, None), "float16 input": (Meta((5, 4), "f16"), _W, _B),
    "float16 weight": (_X, Meta((6, 4), "f16"), None), "3-d weight": (_X, Meta((6, 4, 1)), None),
    "1-d input": (Meta((4,)), _W, None), "columns differ": (Meta((5, 5)), _W, None), "empty": (Meta((0, 4)), _W, None),
    "empty weight": (Meta((0, 4)), Meta((6, 0)), None), "strided input": (Meta((5, 4), contiguous=False), _W, None),
    "strided weight": (_X, Meta((6, 4), contiguous=False), None), "2-d bias": (_X, _W, Meta((1, 6))),
    "short bias": (_X, _W, Meta((5,))), "float16 bias": (_X, _W, Meta((6,), "f16")),
    "strided bias": (_X, _W, Meta((6,), contiguous=False)), "no _shape": (object(), _W, None),
    "bias without _shape": (_X, _W, SimpleNamespace(_dtype="f32")),
}
_FLAG_CASES = {"plain": {}, "accumulation fusion": {"gradient_accumulation_fusion": True},
               "dgrad all-reduce": {"allreduce_dgrad": True}, "sequence parallel": {"sequence_parallel": True},
               "deferral buffer": {"grad_output_buffer": []}, "async flag": {"async_grad_allreduce": False},
               "deferral limit": {"wgrad_deferral_limit": 3}}


@pytest.mark.parametrize("autocast", [False, True])
@pytest.mark.parametrize("flags", list(_FLAG_CASES))
@pytest.mark.parametrize("tensors", list(_TENSOR_CASES))
def test_the_c_wrapper_decides_as_the_python_one(tensors: str, flags: str, autocast: bool) -> None:
    python, compiled, applied = _wrappers(autocast)
    input, weight, bias = _TENSOR_CASES[tensors]
    options = {"gradient_accumulation_fusion": False, "allreduce_dgrad": False, "sequence_parallel": False,
               **_FLAG_CASES[flags]}
    expected = python(input=input, weight=weight, bias=bias, **options)
    assert compiled(input=input, weight=weight, bias=bias, **options) == expected
    positional = [options.pop(name) for name in ("gradient_accumulation_fusion", "allreduce_dgrad",
                                                  "sequence_parallel")]
    assert compiled(input, weight, bias, *positional, **options) == expected
    plain = tensors in ("plain", "no bias") and flags in ("plain", "deferral limit") and not autocast
    assert (expected[0] == "ours") is plain
    assert len(applied) == (3 if plain else 0)


def test_calls_that_do_not_bind_go_to_megatrons_function_as_they_came() -> None:
    python, compiled, applied = _wrappers(False)
    for call in (lambda f: f(_X, _W), lambda f: f(_X, _W, _B, False, False, False, unknown=1),
                 lambda f: f(_X, _W, _B, False, False, False, None, 0, None, 4),
                 lambda f: f(_X, _W, _B, False, False, False, input=_X)):
        with pytest.raises(TypeError):
            call(python)
        with pytest.raises(TypeError):
            call(compiled)
    assert applied == []
    compiled.__dict__["__wrapped__"] = _megatron  # functools.update_wrapper writes attributes like these
    assert compiled.__wrapped__ is _megatron
