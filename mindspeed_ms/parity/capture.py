"""In-process capture of a training run for a parity comparison (PyTorch reference or MindSpore candidate).

Switched on by ``MINDSPEED_MS_PARITY_DIR`` (set by :func:`mindspeed_ms.parity.run_parity`); the
adaptor installs it in either framework mode (:mod:`mindspeed_ms.parity.install`). It patches these
through the default patch registry (so they show in ``status()`` and are reverted exactly):

* ``Module.__call__``: the first module called from outside any module and holding parameters is
  the *model*. Before its first forward the reference dumps its parameters by name, and the
  candidate loads them (names and shapes must match exactly, else :class:`ParityMismatchError`).
  A later such module whose parameters are none of the model's (outside a backward) is another
  *model chunk* (megatron's virtual pipeline stages: a list of models per rank), adopted the same way
  under ``chunk<i>.`` names, in call order. Every forward of a chunk hands over the batch: the
  reference dumps its tensor arguments, the candidate compares its own with them and then uses the
  reference's. During the first forward
  every module's output is recorded, in completion order (not again when a backward recomputes it).
* ``Tensor.backward``, ``torch.autograd.backward`` and megatron's ``schedules.custom_backward`` (which
  megatron.training's ``deallocate_pipeline_outputs`` uses to call the autograd engine directly): each
  backward of a scalar is one step (one micro-batch): its loss, and the norm of the model's gradients
  (``main_grad`` under megatron's DDP) once the backward is done; after the first one every parameter's
  gradient. A pipeline stage's backward of its output with the next stage's gradient is a step without a loss;
  a last stage's loss whose data megatron's ``deallocate_output_tensor`` freed is read before it goes; the
  gradients megatron's DDP starts reducing inside a backward (``overlap_grad_reduce``) are taken before that.
* megatron's ``MegatronOptimizer.__init__`` (candidate only): the optimizers are remembered, and when the
  candidate loads the reference's parameters each refreshes its float32 main copies of them
  (``reload_model_params``: --bf16 / --fp16 keep such copies, taken from the candidate's own initialisation).

Installing it imports nothing in PyTorch mode: the patches wait for ``torch`` (and megatron) to be
imported, and a rank's files are written only once its process calls a model, so the other Python
processes of a run (helpers, launchers) neither pay for torch nor touch the dump.

Files, per rank, under ``$MINDSPEED_MS_PARITY_DIR/rank<r>/``: ``params.npz``, ``batches.npz``,
``forward.npz`` + ``forward_order.json``, ``grads.npz``, ``steps.jsonl``; ``params.chunk<i>.npz`` for
further model chunks.
"""

from __future__ import annotations

import json
import logging
import os
import weakref
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mindspeed_ms.compat.module_recording import recording_module_outputs, set_recording_module_outputs
from mindspeed_ms.parity.context_parallel import cp_mean_gradients, cp_slice
from mindspeed_ms.parity.errors import ParityMismatchError
from mindspeed_ms.parity.values import first_tensor, only, to_numpy

__all__ = [
    "recording_module_outputs",
    "PARITY_DIR_ENV",
    "PARITY_ROLE_ENV",
    "PARITY_LOAD_ENV",
    "ParityMismatchError",
    "ParityCapture",
]

logger = logging.getLogger(__name__)

PARITY_DIR_ENV = "MINDSPEED_MS_PARITY_DIR"
PARITY_ROLE_ENV = "MINDSPEED_MS_PARITY_ROLE"
PARITY_LOAD_ENV = "MINDSPEED_MS_PARITY_LOAD"
_ROLES = ("reference", "candidate")


class ParityCapture:
    """The state of one process's capture; see the module docstring.

    Args:
        directory: where this rank's files go (``<dir>/rank<r>``).
        role: ``"reference"`` or ``"candidate"``.
        rank: this process's rank.
        load_from: the reference's directory (candidate only): parameters and batches are read there.
        context_parallel: the candidate's context-parallel size against a reference without it
            (:mod:`mindspeed_ms.parity.context_parallel`).
    """

    def __init__(self, directory: str | os.PathLike[str], role: str, rank: int,
                 load_from: str | os.PathLike[str] | None = None, context_parallel: int = 1) -> None:
        if role not in _ROLES:
            raise ValueError(f"{PARITY_ROLE_ENV}={role!r}: use one of {', '.join(_ROLES)}")
        self.role = role
        self.rank = rank
        self.out = Path(directory) / f"rank{rank}"
        self.cp, self.cp_rank = context_parallel, rank % context_parallel
        self.reference = Path(load_from) / f"rank{rank // context_parallel}" if load_from else None
        if role == "candidate" and self.reference is None:
            raise ValueError(f"a parity candidate needs {PARITY_LOAD_ENV} (the reference's dump directory)")
        self.model: Any = None
        #: the model chunks adopted so far, in call order (the first is ``model``): more than one under megatron's
        #: virtual pipeline (``--num-layers-per-virtual-pipeline-stage``), each rank holding a list of models
        self.chunks: list[Any] = []
        self.chunk_param_ids: set[int] = set()
        self.names: dict[int, str] = {}
        self.depth = 0
        self.forwards = 0
        self.steps = 0
        self.outputs: dict[str, np.ndarray] = {}
        self.order: list[str] = []
        self.batches: dict[str, np.ndarray] = {}
        self.reference_batches: Any = None
        self.batch_diffs: dict[int, float] = {}
        self.in_backward = False
        #: losses of megatron's pipeline schedules, kept when ``deallocate_output_tensor`` frees their data (before
        #: their backward, in the same order)
        self.pending_losses: list[float] = []
        #: gradients kept by name when megatron's DDP started reducing them inside a backward (overlap_grad_reduce)
        self.before_sync: dict[str, np.ndarray] = {}
        #: megatron's optimizers built so far (weak references): a candidate that loads the reference's parameters
        #: refreshes their main (float32) copies of --bf16 / --fp16 parameters
        self.optimizers: list[weakref.ref[Any]] = []

    @property
    def torch(self) -> Any:
        """The ``torch`` module (imported by the time anything is captured; never imported by the capture first)."""
        import torch

        return torch

    # -- Module.__call__ ---------------------------------------------------------------------------
    def wrap_call(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """Return ``Module.__call__`` that records and hands over as described in the module docstring."""
        capture = self

        def __call__(module: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807  (it is Module.__call__)
            if capture.depth == 0 and capture._is_new_chunk(module):
                capture._adopt_model(module)
            is_model = capture.depth == 0 and any(module is chunk for chunk in capture.chunks)
            if is_model:
                capture.forwards += 1
                args, kwargs = capture._hand_over_batch(args, kwargs)
            recording = is_model and capture.steps == 0 and capture.forwards == 1
            capture.depth += 1
            if recording:
                set_recording_module_outputs(True)
            try:
                result = call(module, *args, **kwargs)
            finally:
                capture.depth -= 1
                if recording:
                    set_recording_module_outputs(False)
            # not in a backward: a recomputed forward (activation checkpointing) is the same modules again, and
            # which of them run there is the backend's business (a fused attention may skip its submodules)
            if (capture.steps == 0 and capture.forwards == 1 and capture.model is not None
                    and not capture.in_backward):
                capture._record_output(module, result)
            return result

        return __call__

    def _is_new_chunk(self, module: Any) -> bool:
        """Whether ``module`` (called from outside any module) is the model or a further chunk of it.

        A further chunk holds parameters, none of them the chunks' so far (a module of the model called on its
        own, as a reentrant activation checkpoint recomputes it inside the backward, is no chunk).
        """
        if self.model is None:
            return any(True for _ in module.parameters())
        if self.in_backward or any(module is chunk for chunk in self.chunks):
            return False
        ids = [id(param) for param in module.parameters()]
        return bool(ids) and not self.chunk_param_ids.intersection(ids)

    def _named_parameters(self) -> Any:
        """``(name, parameter)`` of every chunk; a further chunk's names start with ``chunk<i>.``."""
        for index, chunk in enumerate(self.chunks):
            prefix = f"chunk{index}." if index else ""
            for name, param in chunk.named_parameters():
                yield prefix + name, param

    def _adopt_model(self, model: Any) -> None:
        index = len(self.chunks)
        self.chunks.append(model)
        self.chunk_param_ids.update(id(param) for param in model.parameters())
        prefix, file = (f"chunk{index}.", f"params.chunk{index}.npz") if index else ("", "params.npz")
        if index == 0:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "steps.jsonl").write_text("")
            self.model = model
            self.names = {id(module): name or "model" for name, module in model.named_modules()}
        params = {prefix + name: param for name, param in model.named_parameters()}
        if self.role == "reference":
            np.savez(self.out / file, **{name: to_numpy(p) for name, p in params.items()})
            return
        assert self.reference is not None  # checked in __init__
        if not (self.reference / file).exists():
            raise ParityMismatchError("parameters", [f"model chunk {index}: the reference has no {file} (it "
                                                     f"built {index} model chunk(s) on this rank)"])
        with np.load(self.reference / file) as stored:
            arrays = {name: stored[name] for name in stored.files}
        problems = [f"missing in the candidate: {name}" for name in sorted(set(arrays) - set(params))]
        problems += [f"not in the reference: {name}" for name in sorted(set(params) - set(arrays))]
        problems += [f"{name}: shape {tuple(params[name].shape)} vs the reference's {arrays[name].shape}"
                     for name in sorted(set(params) & set(arrays))
                     if tuple(params[name].shape) != arrays[name].shape]
        if problems:
            raise ParityMismatchError("parameters", problems)
        with self.torch.no_grad():
            for name, param in params.items():
                param.copy_(self.torch.tensor(arrays[name], dtype=param.dtype))
        reloaded = self._reload_optimizers()
        logger.info("parity: loaded the reference's %d parameters (%d optimizers refreshed their main parameters)",
                    len(params), reloaded)

    def _reload_optimizers(self) -> int:
        """Have every megatron optimizer built so far copy the (just loaded) model parameters into its main ones.

        With --bf16 / --fp16 megatron's mixed-precision optimizers keep float32 main copies of the half-precision
        parameters, taken when they were built (from this run's own initialisation); the optimizer steps those
        and copies them back into the model. Without a refresh the candidate trained from its own initial
        weights from the first step on. ``reload_model_params`` is megatron's own refresh (a no-op for float32
        parameters, which the optimizer updates in place).
        """
        count = 0
        # a copy of data, outside autograd: megatron's fp32 distributed optimizer writes through `.data` of views of
        # the parameters, which the host write path refuses for a value autograd records (InPlaceOnViewError)
        with self.torch.no_grad():
            for ref in self.optimizers:
                optimizer = ref()
                if optimizer is not None:
                    optimizer.reload_model_params()
                    count += 1
        return count

    def _hand_over_batch(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict]:
        prefix = f"step{self.forwards}"
        keyed = [(f"{prefix}.arg{i}", value) for i, value in enumerate(args)]
        keyed += [(f"{prefix}.kw.{key}", value) for key, value in kwargs.items()]
        tensors = {key: value for key, value in keyed if isinstance(value, self.torch.Tensor)}
        if self.role == "reference":
            self.batches.update({key: to_numpy(value) for key, value in tensors.items()})
            np.savez(self.out / "batches.npz", **self.batches)
            return args, kwargs
        if self.reference_batches is None:
            assert self.reference is not None
            with np.load(self.reference / "batches.npz") as stored:
                self.reference_batches = {name: stored[name] for name in stored.files}
        missing = [key for key in tensors if key not in self.reference_batches]
        if missing:
            raise ParityMismatchError("batches", [f"forward {self.forwards}: no reference input {key}"
                                                  for key in missing])
        diff = 0.0
        replaced: dict[str, Any] = {}
        for key, value in tensors.items():
            mine, theirs = to_numpy(value), self.reference_batches[key]
            if mine.shape != theirs.shape and self.cp > 1:
                theirs = cp_slice(theirs, mine.shape, self.cp, self.cp_rank)
                theirs = self.reference_batches[key] if theirs is None else theirs
            if mine.shape != theirs.shape:
                raise ParityMismatchError("batches", [f"{key}: shape {mine.shape} vs {theirs.shape}"])
            if mine.size:
                diff = max(diff, float(np.max(np.abs(mine.astype(np.float64) - theirs.astype(np.float64)))))
            replaced[key] = self.torch.tensor(theirs, dtype=value.dtype)
        self.batch_diffs[self.forwards] = diff
        new_args = tuple(replaced.get(f"{prefix}.arg{i}", value) for i, value in enumerate(args))
        new_kwargs = {key: replaced.get(f"{prefix}.kw.{key}", value) for key, value in kwargs.items()}
        return new_args, new_kwargs

    def _record_output(self, module: Any, result: Any) -> None:
        name = self.names.get(id(module))
        tensor = first_tensor(result, self.torch.Tensor)
        if name is None or tensor is None:
            return
        key, count = name, 1
        while key in self.outputs:
            count += 1
            key = f"{name}#{count}"
        self.outputs[key] = to_numpy(tensor)
        self.order.append(key)

    def wrap_optimizer_init(self, init: Callable[..., Any]) -> Callable[..., Any]:
        """Return megatron's ``MegatronOptimizer.__init__`` that remembers each optimizer (see
        :meth:`_reload_optimizers`)."""
        capture = self

        def init_and_remember(optimizer: Any, *args: Any, **kwargs: Any) -> None:
            init(optimizer, *args, **kwargs)
            capture.optimizers.append(weakref.ref(optimizer))

        return init_and_remember

    # -- Tensor.backward ---------------------------------------------------------------------------
    def wrap_backward(self, backward: Callable[..., Any]) -> Callable[..., Any]:
        """Return a backward (``Tensor.backward``, ``torch.autograd.backward``, ``custom_backward``) that records.

        All three take the tensor first. PyTorch's ``Tensor.backward`` calls ``torch.autograd.backward``: the
        outer call records, the inner does not.
        """
        capture = self

        def backward_and_record(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            if capture.in_backward:
                return backward(tensors, *args, **kwargs)
            tensor = only(tensors)
            grad = only(args[0] if args else kwargs.get("gradient", kwargs.get("grad_tensors")))
            at_top = capture.model is not None and capture.depth == 0 and isinstance(tensor, capture.torch.Tensor)
            # a pipeline stage's output with the next stage's gradient (its data possibly freed by megatron's
            # deallocate_output_tensor, which leaves one uninitialised element): a step without a loss
            is_stage = at_top and isinstance(grad, capture.torch.Tensor) and grad.numel() > 1
            is_step = is_stage or (at_top and tensor.numel() == 1)
            loss = None
            if is_step and not is_stage:
                loss = (capture.pending_losses.pop(0) if capture.pending_losses
                        else float(to_numpy(tensor).reshape(()))) / capture.cp
            capture.in_backward = True
            try:
                result = backward(tensors, *args, **kwargs)
            finally:
                capture.in_backward = False
            if is_step:
                capture._record_step(loss)
            return result

        return backward_and_record

    def wrap_deallocate(self, deallocate: Callable[..., Any]) -> Callable[..., Any]:
        """Return megatron's ``deallocate_output_tensor`` that keeps a last pipeline stage's loss before the data goes.

        Megatron's pipeline schedules replace the data of each micro-batch's output (on the last stage: the scalar
        loss) with one uninitialised element once it is sent, before its backward; the loss is read here instead.
        """
        capture = self

        def deallocate_keeping_the_loss(out: Any, *args: Any, **kwargs: Any) -> Any:
            # a loss is a scalar; an output freed before (the interleaved schedule frees some twice) is the
            # one-element placeholder (shape (1,)), whose value is garbage
            if (capture.model is not None and isinstance(out, capture.torch.Tensor) and out.dim() == 0
                    and out.requires_grad):
                capture.pending_losses.append(float(to_numpy(out).reshape(())))
            return deallocate(out, *args, **kwargs)

        return deallocate_keeping_the_loss

    def wrap_start_grad_sync(self, start_grad_sync: Callable[..., Any]) -> Callable[..., Any]:
        """Return megatron's ``_ParamAndGradBucketGroup.start_grad_sync`` that keeps the gradients it will reduce.

        With ``overlap_grad_reduce`` megatron's DDP scales and reduces a bucket's gradients as soon as they are
        ready, inside the backward: what the buffer holds when the backward returns is then partly reduced (an
        asynchronous reduce-scatter on PyTorch, still running or done). The gradients of the backward are the ones
        before that, as without the overlap; they are kept here.
        """
        capture = self

        def start_grad_sync_keeping_the_gradients(group: Any, *args: Any, **kwargs: Any) -> Any:
            if capture.model is not None and capture.in_backward:
                mine = {id(param) for param in getattr(group, "params", ())}
                capture.before_sync.update(capture._gradients(lambda param: id(param) in mine))
            return start_grad_sync(group, *args, **kwargs)

        return start_grad_sync_keeping_the_gradients

    def _gradients(self, which: Callable[[Any], bool] | None = None) -> dict[str, np.ndarray]:
        grads = {}
        for name, param in self._named_parameters():
            if which is not None and not which(param):
                continue
            grad = getattr(param, "main_grad", None)
            grad = param.grad if grad is None else grad
            if grad is not None:
                grads[name] = to_numpy(grad)
        return grads

    def _record_step(self, loss: float | None) -> None:
        self.steps += 1
        grads = {**self._gradients(), **self.before_sync}
        self.before_sync = {}
        if self.cp > 1:
            grads = cp_mean_gradients(grads, self.torch)
        norm = float(np.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads.values())))
        record = {"step": self.steps, "loss": loss, "grad_norm": norm,
                  "batch_max_abs_diff": self.batch_diffs.get(self.forwards)}
        with open(self.out / "steps.jsonl", "a", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\n")
        if self.steps == 1:
            np.savez(self.out / "grads.npz", **grads)
            np.savez(self.out / "forward.npz", **self.outputs)
            (self.out / "forward_order.json").write_text(json.dumps(self.order))
