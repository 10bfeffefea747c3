"""Replacements that let megatron-core run on a CPU build of PyTorch (the parity reference).

megatron-core 0.12.1 assumes CUDA in a few places a small CPU training run reaches: the
model-parallel RNG tracker reads and sets ``torch.cuda`` RNG states, gradient clipping allocates
with ``device='cuda'`` and asserts ``param.grad.type() == 'torch.cuda.FloatTensor'``, and the global
memory buffer allocates on ``torch.cuda.current_device()``. On a machine without CUDA these
replacements keep the same semantics on the CPU: the tracker's named states are CPU generator
states, allocations asked for on an accelerator land on the CPU.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any, Callable

__all__ = [
    "cpu_tracker_add",
    "cpu_tracker_fork",
    "cpu_device_wrapper",
    "current_device",
    "tensor_to_cpu_wrapper",
    "clip_grad_by_total_norm_fp32",
    "CpuStream",
    "router_gating",
    "get_device_rng_state",
    "set_device_rng_state",
    "cuda_get_rng_state",
    "cuda_set_rng_state",
    "set_rng_state_wrapper",
    "tensor_stays_on_cpu",
    "synchronize",
]


def cpu_tracker_add(self: Any, name: str, seed: int) -> None:
    """Track a named RNG state seeded with ``seed`` (``CudaRNGStatesTracker.add`` on the CPU generator).

    Same checks as megatron's: a seed or a name may be added once.
    """
    import torch

    self._is_initialized = True
    if seed in self.seeds_:
        raise Exception(f"seed {seed} already exists")  # megatron raises exactly this; callers may match it
    self.seeds_.add(seed)
    if name in self.states_:
        raise Exception(f"cuda rng state {name} already exists")
    generator = torch.Generator()
    generator.manual_seed(seed)
    self.states_[name] = generator.get_state()


@contextlib.contextmanager
def cpu_tracker_fork(self: Any, name: str = "model-parallel-rng") -> Iterator[None]:
    """Run the block with the named RNG state as the CPU generator's (``CudaRNGStatesTracker.fork``).

    The state advanced inside the block is kept for the next fork; the CPU generator gets its own
    state back afterwards.
    """
    import torch

    from mindspeed_ms.compat import random_state

    if name not in self.states_:
        raise Exception(f"cuda rng state {name} is not added")
    # The outside state never leaves this function: where torch's state functions are ours, it is kept as bytes
    # (no tensor built, none decoded: the same state set back)
    direct = torch.get_rng_state is random_state.get_rng_state and torch.set_rng_state is random_state.set_rng_state
    outside = random_state.capture() if direct else torch.get_rng_state()
    torch.set_rng_state(self.states_[name])
    try:
        yield
    finally:
        self.states_[name] = torch.get_rng_state()
        if direct:
            random_state.restore(outside)
        else:
            torch.set_rng_state(outside)


def _is_accelerator(device: Any) -> bool:
    if device is None:
        return False
    if isinstance(device, int):
        return True  # an int device is a CUDA ordinal
    kind = getattr(device, "type", None) or str(device).split(":", 1)[0]
    return kind.lower() in ("cuda", "npu")


def cpu_device_wrapper(create: Callable[..., Any]) -> Callable[..., Any]:
    """Allocate on the CPU whatever accelerator device a tensor-creation function is asked for.

    Args:
        create: ``torch.tensor``, ``torch.empty``, ``torch.zeros``, ... taking ``device=``.

    Returns:
        ``create`` with a CUDA/NPU device (name, ``torch.device`` or ordinal) replaced by ``"cpu"``.
    """

    @functools.wraps(create)
    def create_on_cpu(*args: Any, **kwargs: Any) -> Any:
        if _is_accelerator(kwargs.get("device")):
            kwargs["device"] = "cpu"
        return create(*args, **kwargs)

    return create_on_cpu


def tensor_to_cpu_wrapper(to: Callable[..., Any]) -> Callable[..., Any]:
    """Keep on the CPU a tensor that ``Tensor.to`` is asked to move to an accelerator (device only).

    Megatron moves the rotary embedding's ``inv_freq`` with ``.to(device=torch.cuda.current_device())``
    on its first forward. A device given positionally (an ordinal, ``"cuda"``, a CUDA ``torch.device``)
    or by keyword becomes ``"cpu"``; dtypes and the other arguments are untouched.

    Args:
        to: ``torch.Tensor.to``.

    Returns:
        ``to`` that never leaves the CPU.
    """

    @functools.wraps(to)
    def to_cpu(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_accelerator(kwargs.get("device")):
            kwargs["device"] = "cpu"
        if args and not isinstance(args[0], bool) and _is_accelerator_like(args[0]):
            args = ("cpu", *args[1:])
        return to(self, *args, **kwargs)

    return to_cpu


def _is_accelerator_like(value: Any) -> bool:
    if isinstance(value, int):
        return True
    if isinstance(value, str):
        return value.split(":", 1)[0].lower() in ("cuda", "npu")
    # a torch.device (its type is a str; a tensor's .type is a method: .to(other) is left alone)
    return isinstance(getattr(value, "type", None), str) and _is_accelerator(value)


def current_device() -> int:
    """Return 0 (``torch.cuda.current_device`` without CUDA; allocations on it go to the CPU)."""
    return 0


def clip_grad_by_total_norm_fp32(parameters: Any, max_norm: float, total_norm: float,
                                 use_decoupled_grad: bool = False) -> None:
    """Scale fp32 gradients in place so their total norm is at most ``max_norm`` (CPU tensors allowed).

    megatron-core's version asserts the gradients are ``torch.cuda.FloatTensor``; the arithmetic
    here is the same (coefficient ``max_norm / (total_norm + 1e-6)``, applied when below 1).
    """
    import torch

    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    attribute = "decoupled_grad" if use_decoupled_grad else "grad"
    grads = []
    for param in parameters:
        grad = getattr(param, attribute, None)
        if grad is None:
            continue
        if grad.dtype not in (torch.float32, torch.bfloat16) if use_decoupled_grad else grad.dtype != torch.float32:
            raise TypeError(f"clip_grad_by_total_norm_fp32: a {attribute} of dtype {grad.dtype} is not fp32")
        grads.append(grad.detach())
    clip_coeff = max_norm / (total_norm + 1.0e-6)
    if clip_coeff < 1.0:
        for grad in grads:
            grad.mul_(clip_coeff)


class CpuStream:
    """A stand-in for ``torch.cuda.Stream`` without CUDA: work on the CPU is already in order.

    megatron's MoE alltoall dispatcher creates a side stream in its constructor; its use of it is
    replaced by a synchronous copy (``megatron_parallel.dtoh_without_streams``).
    """

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        del device, priority, kwargs

    def wait_stream(self, stream: Any) -> None:
        """Do nothing: CPU work runs in program order."""
        del stream

    def synchronize(self) -> None:
        """Do nothing: CPU work runs in program order."""


def router_gating(self: Any, input: Any) -> Any:  # noqa: A002  (megatron's argument name)
    """Compute the MoE router's logits on the CPU (``megatron.core.transformer.moe.router.Router.gating``).

    megatron moves a CPU router weight to ``torch.cuda.current_device()`` before every forward, which
    raises without CUDA; the logits are the same ``linear`` in the router dtype.
    """
    import torch

    router_dtype = {"fp32": torch.float32, "fp64": torch.float64}.get(self.config.moe_router_dtype, input.dtype)
    return torch.nn.functional.linear(input.to(router_dtype), self.weight.to(router_dtype))


def get_device_rng_state(device: Any = "cuda", clone: bool = False, graph_safe: bool = False) -> Any:
    """Return the CPU generator's state (``megatron.core.tensor_parallel.random._get_cuda_rng_state``).

    Activation recompute saves the device RNG state before a checkpointed forward; without CUDA the
    device generator is the CPU one.
    """
    del device, clone, graph_safe
    import torch

    return torch.get_rng_state()


def set_device_rng_state(new_state: Any, device: Any = -1, graph_safe: bool = False) -> None:
    """Set the CPU generator's state (``megatron.core.tensor_parallel.random._set_cuda_rng_state``)."""
    del device, graph_safe
    import torch

    torch.set_rng_state(new_state)


def cuda_get_rng_state(device: Any = "cuda") -> Any:
    """Return the CPU generator's state (``torch.cuda.get_rng_state`` without CUDA).

    Megatron-LM's ``save_checkpoint`` stores ``torch.cuda.get_rng_state()`` beside ``torch.get_rng_state()``;
    without CUDA the device generator is the CPU one (as the tracker's states are), so both keys hold it.
    """
    del device
    import torch

    return torch.get_rng_state()


def cuda_set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Set the CPU generator's state (``torch.cuda.set_rng_state`` without CUDA: Megatron-LM's ``load_checkpoint``)."""
    del device
    import torch

    torch.set_rng_state(new_state)


def set_rng_state_wrapper(set_state: Callable[..., Any]) -> Callable[..., Any]:
    """Refuse, with a typed error, a random state mindspeed_ms wrote on MindSpore (``torch.set_rng_state``).

    Megatron-LM's ``load_checkpoint`` restores ``torch.set_rng_state(rng_state['torch_rng_state'])``; from a
    checkpoint MindSpore wrote that is a 544-byte MindSpore state, which PyTorch's CPU generator cannot stand for.
    Any other state goes to ``set_state`` unchanged (PyTorch's own checks apply).

    Args:
        set_state: ``torch.set_rng_state``.

    Returns:
        ``set_state`` that raises :class:`~mindspeed_ms.compat.errors.RandomStateError` (a ``RuntimeError``, as
        PyTorch's refusal is) for MindSpore's state, changing nothing.
    """
    from mindspeed_ms.compat import random_state

    @functools.wraps(set_state)
    def set_rng_state(new_state: Any) -> None:
        numel = getattr(new_state, "numel", None)
        if callable(numel) and numel() == random_state.STATE_BYTES and getattr(new_state, "dtype", None) is not None \
                and str(new_state.dtype) == "torch.uint8" \
                and bytes(new_state[:len(random_state.STATE_MAGIC)].tolist()) == random_state.STATE_MAGIC:
            raise random_state.RandomStateError(
                "format", f"torch.set_rng_state(): the state is MindSpore's (mindspeed_ms's {random_state.STATE_BYTES}"
                          f"-byte state), which PyTorch's CPU generator (5056 bytes) cannot stand for"
                          f"{random_state.CROSS_BACKEND_HINT}")
        set_state(new_state)

    return set_rng_state


def tensor_stays_on_cpu(self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """Return ``self`` (``Tensor.cuda`` without CUDA: megatron's pipeline schedule calls ``.cuda()``)."""
    del device, non_blocking, kwargs
    return self


def synchronize(device: Any = None) -> None:
    """Do nothing (``torch.cuda.synchronize`` without CUDA: CPU work has already run in order)."""
    del device
