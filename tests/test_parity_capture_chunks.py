"""The parity capture with megatron's virtual pipeline: a rank holds a list of model chunks, each called on its own,
and the interleaved schedule frees some stage outputs twice (no torch in this process: fakes shaped like what the
capture touches)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mindspeed_ms.parity.capture import ParityCapture, ParityMismatchError


class _FakeTensor:
    def __init__(self, array: Any, dtype: Any = None, requires_grad: bool = False) -> None:
        self.array = np.asarray(array, dtype=np.float64)
        self.dtype = dtype
        self.shape = self.array.shape
        self.requires_grad = requires_grad
        self.grad: _FakeTensor | None = None

    def detach(self) -> _FakeTensor:
        return self

    def numpy(self) -> np.ndarray:
        return self.array

    def copy_(self, other: _FakeTensor) -> None:
        self.array = np.array(other.array)

    def dim(self) -> int:
        return self.array.ndim

    def numel(self) -> int:
        return self.array.size


class _FakeTorch:
    Tensor = _FakeTensor

    @staticmethod
    def tensor(array: Any, dtype: Any = None) -> _FakeTensor:
        return _FakeTensor(array, dtype)

    @staticmethod
    @contextlib.contextmanager
    def no_grad() -> Any:
        yield


class _Chunk:
    """A model chunk: one parameter ``w`` (megatron's chunks name their parameters alike, each from layer 0)."""

    def __init__(self, value: float) -> None:
        self.weight = _FakeTensor(np.full(3, value))

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


def _run(capture: _Capture, chunks: list[_Chunk], tokens: list[float]) -> list[Any]:
    """Call chunk 0 then chunk 1 (the interleaved schedule's order), each with a batch; return what they got."""
    seen: list[Any] = []
    call = capture.wrap_call(lambda module, *args, **kwargs: seen.append((module, args[0].array.tolist())))
    for chunk, token in zip(chunks, tokens):
        call(chunk, _FakeTensor([token]))
    return seen


def test_every_model_chunk_of_a_virtual_pipeline_rank_loads_the_references_parameters(tmp_path: Path) -> None:
    reference = _Capture(tmp_path / "ref", "reference", 0)
    _run(reference, [_Chunk(1.0), _Chunk(2.0)], [5.0, 6.0])
    with np.load(tmp_path / "ref" / "rank0" / "params.chunk1.npz") as stored:
        assert stored.files == ["chunk1.w"]
        np.testing.assert_array_equal(stored["chunk1.w"], np.full(3, 2.0))
    candidate = _Capture(tmp_path / "cand", "candidate", 0, tmp_path / "ref")
    chunks = [_Chunk(0.0), _Chunk(0.0)]
    seen = _run(candidate, chunks, [7.0, 8.0])
    # before: only the first chunk was adopted; the second trained from the candidate's own initialisation and
    # Megatron-LM's pretrain_gpt.py with --num-layers-per-virtual-pipeline-stage differed from the first loss on
    np.testing.assert_array_equal(chunks[0].weight.array, np.full(3, 1.0))
    np.testing.assert_array_equal(chunks[1].weight.array, np.full(3, 2.0))
    assert [tokens for _, tokens in seen] == [[5.0], [6.0]]  # each chunk's forward got the reference's batch
    assert candidate.forwards == 2
    chunks[0].weight.grad, chunks[1].weight.grad = _FakeTensor(np.zeros(3)), _FakeTensor(np.full(3, 2.0))
    candidate.wrap_backward(lambda tensors, *args, **kwargs: None)(_FakeTensor(1.5, requires_grad=True))
    with np.load(tmp_path / "cand" / "rank0" / "grads.npz") as stored:  # the gradients of every chunk
        assert sorted(stored.files) == ["chunk1.w", "w"]
    (step,) = [json.loads(line) for line in (tmp_path / "cand" / "rank0" / "steps.jsonl").read_text().splitlines()]
    assert step["grad_norm"] == pytest.approx(np.sqrt(12.0))  # and their norm


def test_a_module_of_the_model_called_on_its_own_is_no_chunk(tmp_path: Path) -> None:
    capture = _Capture(tmp_path / "ref", "reference", 0)
    model = _Chunk(1.0)
    _run(capture, [model], [5.0])
    part = _Chunk(1.0)
    part.weight = model.weight  # a reentrant activation checkpoint recomputes a block of the model
    capture.wrap_call(lambda module, *args: None)(part, _FakeTensor([1.0]))
    assert capture.chunks == [model]
    capture.in_backward = True  # and it does so inside the backward
    capture.wrap_call(lambda module, *args: None)(_Chunk(3.0), _FakeTensor([1.0]))
    assert capture.chunks == [model]
    assert not (tmp_path / "ref" / "rank0" / "params.chunk1.npz").exists()


def test_a_candidate_with_more_chunks_than_the_reference_says_so(tmp_path: Path) -> None:
    _run(_Capture(tmp_path / "ref", "reference", 0), [_Chunk(1.0)], [5.0])
    candidate = _Capture(tmp_path / "cand", "candidate", 0, tmp_path / "ref")
    with pytest.raises(ParityMismatchError, match="model chunk 1: the reference has no params.chunk1.npz"):
        _run(candidate, [_Chunk(0.0), _Chunk(0.0)], [5.0, 5.0])


def test_a_stage_output_freed_twice_is_no_loss(tmp_path: Path) -> None:
    capture = _Capture(tmp_path / "ref", "reference", 0)
    _run(capture, [_Chunk(1.0)], [5.0])
    freed: list[Any] = []
    deallocate = capture.wrap_deallocate(lambda out, *args: freed.append(out))
    placeholder = _FakeTensor([-897875.1875], requires_grad=True)  # shape (1,): a stage output already freed
    deallocate(placeholder, True)
    assert capture.pending_losses == []  # before: queued, and a later loss step of this rank reported it
    loss = _FakeTensor(4.25, requires_grad=True)  # the last stage's loss: a scalar
    deallocate(loss, True)
    assert capture.pending_losses == [4.25]
    assert freed == [placeholder, loss]
    backward = capture.wrap_backward(lambda tensors, *args, **kwargs: None)
    backward(_FakeTensor([0.0], requires_grad=True))  # the loss's backward, its data freed
    steps = [json.loads(line) for line in (tmp_path / "ref" / "rank0" / "steps.jsonl").read_text().splitlines()]
    assert [step["loss"] for step in steps] == [4.25]
