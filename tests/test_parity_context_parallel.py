"""Parity of a context-parallel candidate against a reference without context parallelism: sequence slices of
batches and module outputs, rank mapping (no runs; the real run is scripts/real_mindspeed_llm_pretrain.sh cpparity)."""

from __future__ import annotations

import contextlib
import json
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mindspeed_ms.parity.capture import ParityCapture
from mindspeed_ms.parity.compare import compare_dumps
from mindspeed_ms.parity.context_parallel import context_parallel_size, cp_slice


def test_cp_slice_takes_the_load_balanced_chunks_of_the_sequence_axis() -> None:
    tokens = np.arange(16).reshape(2, 8)  # (b, s): CP2 cuts s into 4 chunks of 2
    assert cp_slice(tokens, (2, 4), 2, 0).tolist() == [[0, 1, 6, 7], [8, 9, 14, 15]]
    assert cp_slice(tokens, (2, 4), 2, 1).tolist() == [[2, 3, 4, 5], [10, 11, 12, 13]]
    hidden = np.arange(8 * 2 * 3).reshape(8, 2, 3)  # (s, b, h)
    np.testing.assert_array_equal(cp_slice(hidden, (4, 2, 3), 2, 1), hidden[2:6])
    assert cp_slice(tokens, (2, 3), 2, 0) is None  # not a CP share
    assert cp_slice(tokens, (1, 4), 2, 0) is None  # two axes differ
    assert cp_slice(tokens, (2, 8), 1, 0) is None


def test_the_cp_size_comes_from_the_environment_and_must_be_positive() -> None:
    assert context_parallel_size({}) == 1
    assert context_parallel_size({"MINDSPEED_MS_PARITY_CP": "2"}) == 2
    for bad in ("0", "-1", "two"):
        with pytest.raises(ValueError, match="MINDSPEED_MS_PARITY_CP"):
            context_parallel_size({"MINDSPEED_MS_PARITY_CP": bad})


def _dump(rank: Path, losses: list[float], grads: dict, outputs: dict) -> None:
    rank.mkdir(parents=True)
    rank.joinpath("steps.jsonl").write_text("".join(
        json.dumps({"step": i + 1, "loss": loss, "grad_norm": 1.0}) + "\n" for i, loss in enumerate(losses)))
    np.savez(rank / "grads.npz", **grads)
    np.savez(rank / "forward.npz", **outputs)
    rank.joinpath("forward_order.json").write_text(json.dumps(list(outputs)))


def test_each_cp_rank_is_compared_with_its_slice_of_the_reference(tmp_path: Path) -> None:
    hidden = np.random.default_rng(0).standard_normal((8, 2, 3))
    grads = {"w": np.ones(3)}
    _dump(tmp_path / "ref" / "rank0", [4.0, 3.0], grads, {"embedding": hidden, "head": np.ones(5)})
    for cp_rank in (0, 1):
        mine = cp_slice(hidden, (4, 2, 3), 2, cp_rank)
        _dump(tmp_path / "cand" / f"rank{cp_rank}", [4.0, 3.0], grads, {"embedding": mine, "head": np.ones(5)})
    assert not compare_dumps(tmp_path / "ref", tmp_path / "cand").ok  # without CP: shapes differ
    report = compare_dumps(tmp_path / "ref", tmp_path / "cand", context_parallel=2)
    assert report.ok
    assert [rank.rank for rank in report.ranks] == [0, 1]
    assert [item.rel for item in report.ranks[1].forward] == [0.0, 0.0]
    # rank 1 holding rank 0's slice is a divergence, and a CP rank that wrote nothing a problem
    (tmp_path / "cand" / "rank1" / "forward.npz").unlink()
    np.savez(tmp_path / "cand" / "rank1" / "forward.npz", embedding=cp_slice(hidden, (4, 2, 3), 2, 0),
             head=np.ones(5))
    report = compare_dumps(tmp_path / "ref", tmp_path / "cand", context_parallel=2)
    assert not report.ok
    assert report.ranks[1].first_divergent_module == "embedding"
    report = compare_dumps(tmp_path / "ref", tmp_path / "cand", context_parallel=4)
    assert any("rank 3: the candidate wrote nothing" in p for r in report.ranks for p in r.problems)


class _FakeTensor:
    """Enough of a tensor for the capture's model adoption and batch hand-over (no torch in the pytest process)."""

    def __init__(self, array: Any, dtype: Any = None) -> None:
        self.array = np.asarray(array)
        self.dtype = dtype or str(self.array.dtype)
        self.shape = self.array.shape

    def detach(self) -> _FakeTensor:
        return self

    def numpy(self) -> np.ndarray:
        return self.array

    def copy_(self, other: _FakeTensor) -> None:
        self.array = other.array


class _FakeTorch:
    Tensor = _FakeTensor

    @staticmethod
    def tensor(array: Any, dtype: Any = None) -> _FakeTensor:
        return _FakeTensor(array, dtype)

    grad_enabled = True

    @staticmethod
    @contextlib.contextmanager
    def no_grad() -> Any:
        _FakeTorch.grad_enabled = False
        try:
            yield
        finally:
            _FakeTorch.grad_enabled = True


class _FakeOptimizer:
    """Megatron's optimizer as the capture sees it: reload_model_params copies the loaded parameters."""

    def __init__(self) -> None:
        self.grad_enabled_in_reload: list[bool] = []

    def reload_model_params(self) -> None:
        self.grad_enabled_in_reload.append(_FakeTorch.grad_enabled)


class _FakeModel:
    def __init__(self) -> None:
        self.weight = _FakeTensor(np.zeros(3))

    def parameters(self) -> Any:
        return iter([self.weight])

    def named_parameters(self) -> Any:
        return iter([("w", self.weight)])

    def named_modules(self) -> Any:
        return iter([("", self)])


class _Capture(ParityCapture):
    @property
    def torch(self) -> Any:
        return _FakeTorch


def test_a_cp_candidate_reads_its_dp_ranks_reference_and_gets_its_slice_of_the_batch(tmp_path: Path) -> None:
    tokens = np.arange(16).reshape(2, 8)
    (tmp_path / "ref" / "rank0").mkdir(parents=True)
    np.savez(tmp_path / "ref" / "rank0" / "batches.npz", **{"step1.arg0": tokens, "step1.kw.mask": np.ones((1, 8))})
    np.savez(tmp_path / "ref" / "rank0" / "params.npz", w=np.ones(3))
    capture = _Capture(tmp_path / "cand", "candidate", 3, tmp_path / "ref", context_parallel=2)
    assert capture.reference == tmp_path / "ref" / "rank1"
    assert capture.cp_rank == 1
    capture = _Capture(tmp_path / "cand", "candidate", 1, tmp_path / "ref", context_parallel=2)
    assert capture.reference == tmp_path / "ref" / "rank0"
    optimizer = _FakeOptimizer()
    capture.optimizers.append(weakref.ref(optimizer))
    seen: list[Any] = []
    call = capture.wrap_call(lambda module, *args, **kwargs: seen.append((args, kwargs)))
    model, mine = _FakeModel(), cp_slice(tokens, (2, 4), 2, 1)
    call(model, _FakeTensor(mine + 1), mask=_FakeTensor(np.ones((1, 8))))
    np.testing.assert_array_equal(model.weight.array, np.ones(3))  # the reference's parameters
    (args, kwargs), = seen
    np.testing.assert_array_equal(args[0].array, mine)  # the reference's slice replaces the candidate's
    np.testing.assert_array_equal(kwargs["mask"].array, np.ones((1, 8)))
    assert capture.batch_diffs[1] == 1.0
    # the optimizers refresh their main copies outside autograd (megatron's fp32 distributed optimizer writes through
    # `.data` of parameter views: with grad mode on, the host write path raised InPlaceOnViewError)
    assert optimizer.grad_enabled_in_reload == [False]
