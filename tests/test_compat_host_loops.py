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
from typing import Any

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


def _chunk_loop(bucket: dict[str, Any], targets: list[np.ndarray], factors: list[tuple[Any, Any]], amsgrad: bool,
                maximize: bool, chunk: int, numpy_only: bool) -> None:
    """flat_adam's loop over a bucket, chunk by chunk, one moments call and one apply call per part."""
    moments = host_kernels.numpy_adam_moments if numpy_only else host_kernels.adam_moments
    apply = host_kernels.numpy_adam_apply if numpy_only else host_kernels.adam_apply
    f32 = np.float32
    scalars = (f32(1 - 0.9), f32(0.999), f32(1 - 0.999), f32(np.sqrt(1 - 0.999 ** 3)), f32(1e-8))
    offsets = [0, *itertools.accumulate(target.size for target in targets)][:-1]
    n, index = bucket["grad"].size, 0
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        tmp, upd = bucket["tmp"][:stop - start], bucket["update"][:stop - start]
        moments(bucket["grad"][start:stop], bucket["first"][start:stop], bucket["second"][start:stop],
                bucket["maximum"][start:stop] if amsgrad else None, tmp, upd if maximize else None, scalars)
        while index < len(targets):
            begin, values = offsets[index], targets[index]
            low, high = max(begin, start), min(begin + values.size, stop)
            apply(bucket["first"][low:high], tmp[low - start:high - start], factors[index][0],
                  upd[low - start:high - start], values[low - begin:high - begin], factors[index][1])
            if begin + values.size > stop:
                break
            index += 1


def _bucket(seed: int, sizes: list[int], chunk: int) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    n = sum(sizes)
    state = _state(seed, n, True, True)
    state["tmp"], state["update"] = state["tmp"][:min(chunk, n)].copy(), state["update"][:min(chunk, n)].copy()
    targets = np.split(state.pop("target"), list(itertools.accumulate(sizes))[:-1])
    return state, [target.copy() for target in targets]


LAYOUTS = ([5], [3, 4, 9, 1, 0, 20], [64, 1, 1, 100], [1000, 17, 33], [7] * 12)


@pytest.mark.parametrize("amsgrad,maximize", list(itertools.product((False, True), repeat=2)))
def test_a_bucket_in_one_call_gives_the_chunk_loops_bits(amsgrad: bool, maximize: bool) -> None:
    """adam_bucket (one C call over the bucket) against flat_adam's loop of per-chunk calls, with the C loops and
    with NumPy's passes: parts that cross chunk boundaries, empty and one-element parameters, a chunk larger than
    the bucket, steps and decays that differ per parameter (None: no decay), edge values."""
    for sizes, chunk in itertools.product(LAYOUTS, (1, 7, 16, 100, 1 << 15)):
        factors = [(np.float32(-1e-3 * (i + 1)), None if i % 3 == 0 else np.float32(1 - 1e-4 * i))
                   for i in range(len(sizes))]
        runs = [_bucket(len(sizes), sizes, chunk) for _ in range(3)]
        f32 = np.float32
        scalars = (f32(1 - 0.9), f32(0.999), f32(1 - 0.999), f32(np.sqrt(1 - 0.999 ** 3)), f32(1e-8))
        (one, one_targets), (loop, loop_targets), (numpys, numpy_targets) = runs
        offsets = [0, *itertools.accumulate(sizes)][:-1]
        with np.errstate(all="ignore"):
            for _ in range(2):
                assert host_kernels.adam_bucket(one["grad"], one["first"], one["second"],
                                                one["maximum"] if amsgrad else None, one["tmp"], one["update"],
                                                maximize, scalars, one_targets, offsets, factors, chunk)
                _chunk_loop(loop, loop_targets, factors, amsgrad, maximize, chunk, numpy_only=False)
                _chunk_loop(numpys, numpy_targets, factors, amsgrad, maximize, chunk, numpy_only=True)
        for other, other_targets in ((loop, loop_targets), (numpys, numpy_targets)):
            for name in ("grad", "first", "second", "maximum"):
                assert one[name].view(np.uint32).tolist() == other[name].view(np.uint32).tolist(), (name, sizes)
            for ours, theirs in zip(one_targets, other_targets):
                assert ours.view(np.uint32).tolist() == theirs.view(np.uint32).tolist(), (sizes, chunk)


def test_a_bucket_the_loops_do_not_take_is_left_untouched() -> None:
    """Non-consecutive offsets, a bucket the targets do not cover, a float64 or strided target, work memory
    smaller than a chunk, a factor that is not a pair: False, and nothing written (the caller's loop runs)."""
    f32 = np.float32
    scalars = (f32(0.1), f32(0.999), f32(0.001), f32(0.05), f32(1e-8))

    def attempt(sizes: list[int], offsets: list[int], chunk: int = 8, change: Any = None) -> bool:
        bucket, targets = _bucket(0, sizes, chunk)
        factors: list[Any] = [(f32(-0.01), None)] * len(sizes)
        if change is not None:
            bucket, targets, factors = change(bucket, targets, factors)
        before = {name: array.copy() for name, array in bucket.items()}
        targets_before = [target.copy() for target in targets]
        done = host_kernels.adam_bucket(bucket["grad"], bucket["first"], bucket["second"], None, bucket["tmp"],
                                        bucket["update"], False, scalars, targets, offsets, factors, chunk)
        assert all(np.array_equal(before[name], bucket[name], equal_nan=True) for name in bucket) or done
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(targets_before, targets)) or done
        return done

    assert attempt([4, 4], [0, 4])
    assert not attempt([4, 4], [0, 5])
    assert not attempt([4, 4], [0, 4, 8])
    assert not attempt([4, 4], [0, 4], change=lambda b, t, f: (b, t[:1], f[:1]))
    assert not attempt([4, 4], [0, 4], change=lambda b, t, f: (b, [t[0].astype(np.float64), t[1]], f))
    assert not attempt([8, 4], [0, 8], change=lambda b, t, f: (b, [np.zeros(16, np.float32)[::2], t[1]], f))
    assert not attempt([8, 8], [0, 8], change=lambda b, t, f: ({**b, "tmp": b["tmp"][:4]}, t, f))
    assert not attempt([4, 4], [0, 4], change=lambda b, t, f: (b, t, [f[0], f32(-0.01)]))
