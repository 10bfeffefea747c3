"""mindspeed_ms.compat._host_loops: Adam's moments and update in one pass give NumPy's passes' bits.

host_kernels.adam_moments/adam_apply run the optional C loops when they are built (one pass per element) and
NumPy's ufunc passes otherwise; both must leave every array bit for bit the same, on every flag combination
(amsgrad's maximum, maximize's negated gradient, weight decay or none), over lengths that end in partial vector
tails, and over edge values (zeros of both signs, subnormals, huge values, inf and NaN gradients). Anything the
loops do not take (float64, strided arrays) goes to NumPy's passes. Flat Adam against PyTorch's rule is
test_compat_flat_adam.py's; the optimizer parity tests run the whole step.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mindspeed_ms.compat import host_kernels

LENGTHS = (1, 7, 16, 33, 1000, 32768 + 5)


def test_the_loops_are_built_by_the_install() -> None:
    assert host_kernels.ACCELERATED, "mindspeed_ms.compat._host_loops is missing: pip install -e . needs a C compiler"


def _values(rng: np.random.Generator, n: int, edge: bool) -> np.ndarray:
    values = (rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 2, n)).astype(np.float32)
    if edge and n >= 16:
        values[:8] = [0.0, -0.0, 1e-45, -1e-45, 3e-39, 1e30, -1e30, 1.1754944e-38]
    return values


def _state(seed: int, n: int, edge: bool, grad_special: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    grad = _values(rng, n, edge)
    if grad_special and n >= 16:
        grad[8:11] = [np.inf, -np.inf, np.nan]
    return {"grad": grad, "first": _values(rng, n, edge), "second": np.abs(_values(rng, n, edge)),
            "maximum": np.abs(_values(rng, n, edge)), "tmp": np.full(n, 7.0, np.float32),
            "negated": np.full(n, 5.0, np.float32), "update": np.full(n, 3.0, np.float32),
            "target": _values(rng, n, edge)}


def _step(state: dict[str, np.ndarray], amsgrad: bool, maximize: bool, decay: bool, numpy_only: bool) -> None:
    f32 = np.float32
    scalars = (f32(1 - 0.9), f32(0.999), f32(1 - 0.999), f32(np.sqrt(1 - 0.999 ** 3)), f32(1e-8))
    moments = host_kernels.numpy_adam_moments if numpy_only else host_kernels.adam_moments
    apply = host_kernels.numpy_adam_apply if numpy_only else host_kernels.adam_apply
    used = moments(state["grad"], state["first"], state["second"], state["maximum"] if amsgrad else None,
                   state["tmp"], state["negated"] if maximize else None, scalars)
    assert used is (state["negated"] if maximize else state["grad"])
    apply(state["first"], state["tmp"], f32(-1e-3 / (1 - 0.9 ** 3)), state["update"], state["target"],
          f32(1 - 1e-3 * 0.1) if decay else None)


@pytest.mark.parametrize("amsgrad,maximize,decay", list(itertools.product((False, True), repeat=3)))
def test_one_pass_gives_numpys_bits(amsgrad: bool, maximize: bool, decay: bool) -> None:
    for n, (edge, special) in itertools.product(LENGTHS, ((False, False), (True, False), (True, True))):
        ours, numpys = _state(n, n, edge, special), _state(n, n, edge, special)
        with np.errstate(all="ignore"):
            for _ in range(3):  # the moments carry over steps
                _step(ours, amsgrad, maximize, decay, numpy_only=False)
                _step(numpys, amsgrad, maximize, decay, numpy_only=True)
        for name in ours:
            assert ours[name].view(np.uint32).tolist() == numpys[name].view(np.uint32).tolist() or (
                np.array_equal(ours[name], numpys[name], equal_nan=True)), (name, n, edge, special)


@np.errstate(all="ignore")  # float16's epsilon rounds to 0
def test_what_the_loops_do_not_take_runs_numpys_passes() -> None:
    for dtype in (np.float64, np.float16):
        ours, numpys = _state(3, 64, False, False), _state(3, 64, False, False)
        for state in (ours, numpys):
            for name in state:
                state[name] = state[name].astype(dtype)
        scalars = tuple(dtype(v) for v in (0.1, 0.999, 0.001, 0.05, 1e-8))
        host_kernels.adam_moments(ours["grad"], ours["first"], ours["second"], None, ours["tmp"], None, scalars)
        host_kernels.numpy_adam_moments(numpys["grad"], numpys["first"], numpys["second"], None, numpys["tmp"],
                                         None, scalars)
        host_kernels.adam_apply(ours["first"], ours["tmp"], dtype(-0.01), ours["update"], ours["target"], None)
        host_kernels.numpy_adam_apply(numpys["first"], numpys["tmp"], dtype(-0.01), numpys["update"],
                                       numpys["target"], None)
        for name in ours:
            assert ours[name].dtype == dtype
            np.testing.assert_array_equal(ours[name], numpys[name], err_msg=name)
    # a strided (every other element) float32 view: not contiguous, NumPy's passes over the view only
    ours, numpys = _state(4, 200, False, False), _state(4, 200, False, False)
    scalars = tuple(np.float32(v) for v in (0.1, 0.999, 0.001, 0.05, 1e-8))
    host_kernels.adam_moments(ours["grad"][::2], ours["first"][::2], ours["second"][::2], None, ours["tmp"][::2],
                              None, scalars)
    host_kernels.numpy_adam_moments(numpys["grad"][::2], numpys["first"][::2], numpys["second"][::2], None,
                                     numpys["tmp"][::2], None, scalars)
    for name in ours:
        np.testing.assert_array_equal(ours[name], numpys[name], err_msg=name)


def test_mismatched_lengths_are_left_to_numpy_which_raises() -> None:
    state = _state(5, 64, False, False)
    scalars = tuple(np.float32(v) for v in (0.1, 0.999, 0.001, 0.05, 1e-8))
    with pytest.raises(ValueError):
        host_kernels.adam_moments(state["grad"], state["first"][:32], state["second"], None, state["tmp"], None,
                                  scalars)
