"""``Tensor.type()`` names a CPU tensor as PyTorch does, except inside megatron's optimizers' parameter sorting.

megatron-core 0.12.1 tells parameter kinds apart by ``param.type()`` and accepts only the CUDA names
(``'torch.cuda.FloatTensor'``, ``HalfTensor``, ``BFloat16Tensor``) in ``Float16OptimizerWithFloat16Params.__init__``
and ``DistributedOptimizer.__init__`` / ``_build_model_and_main_param_groups``; anything else raises TypeError. On a
CPU backend PyTorch's answer is ``'torch.FloatTensor'``. Rather than answering the CUDA name everywhere (code that
converts with ``x.type(y.type())`` or compares names would see a CUDA tensor), :func:`cuda_type_names_wrapper`
wraps exactly those megatron functions: while one runs, ``Tensor.type()`` answers the CUDA name of a CPU tensor.
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any, Callable

__all__ = ["MEGATRON_TYPE_CHECKS", "MEGATRON_TYPE_CHECKS_PURPOSE", "cuda_type_names_wrapper", "in_cuda_type_scope",
           "type_name", "scoped_cuda_type_name_wrapper", "CUDA_TENSOR_TYPES", "cpu_cuda_tensor_type_wrapper"]

#: MSAdapter's ``torch.cuda`` legacy tensor types: each is MindSpore's Tensor class itself
CUDA_TENSOR_TYPES = ("FloatTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor")

#: the megatron-core 0.12.1 functions that compare ``param.type()`` with CUDA names (optimizer.py:548/567,
#: distrib_optimizer.py:335/387/546); clip_grads.py:167 is replaced whole by both CPU providers
MEGATRON_TYPE_CHECKS = (
    "megatron.core.optimizer.optimizer.Float16OptimizerWithFloat16Params.__init__",
    "megatron.core.optimizer.distrib_optimizer.DistributedOptimizer.__init__",
    "megatron.core.optimizer.distrib_optimizer.DistributedOptimizer._build_model_and_main_param_groups",
)
MEGATRON_TYPE_CHECKS_PURPOSE = ("megatron's optimizers accept only params whose type() is 'torch.cuda.FloatTensor' "
                                "(and Half/BFloat16), a CPU tensor is 'torch.FloatTensor': inside this function "
                                "type() answers the CUDA name")

_CUDA_NAMES: contextvars.ContextVar[bool] = contextvars.ContextVar("mindspeed_ms_cuda_type_names", default=False)


def in_cuda_type_scope() -> bool:
    """Whether a function wrapped by :func:`cuda_type_names_wrapper` is running (in this context)."""
    return _CUDA_NAMES.get()


def type_name(kind: str, is_cuda: bool) -> str:
    """Return PyTorch's legacy name of a ``kind`` tensor (``"FloatTensor"``) on the CPU or, when ``is_cuda`` or
    inside a megatron type check, on CUDA."""
    return f"torch.cuda.{kind}" if is_cuda or _CUDA_NAMES.get() else f"torch.{kind}"


def cuda_type_names_wrapper(function: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``function`` with ``Tensor.type()`` answering CUDA names for CPU tensors.

    Args:
        function: one of :data:`MEGATRON_TYPE_CHECKS`.

    Returns:
        ``function``, entering the scope for the duration of each call (nested calls keep it; it ends with
        the outermost, also on an exception).
    """

    @functools.wraps(function)
    def with_cuda_type_names(*args: Any, **kwargs: Any) -> Any:
        token = _CUDA_NAMES.set(True)
        try:
            return function(*args, **kwargs)
        finally:
            _CUDA_NAMES.reset(token)

    return with_cuda_type_names


def scoped_cuda_type_name_wrapper(type_method: Callable[..., Any]) -> Callable[..., Any]:
    """Make real PyTorch's ``Tensor.type()`` name a CPU tensor as its CUDA counterpart inside the scope only.

    Args:
        type_method: ``torch.Tensor.type`` (the ``pytorch_cpu`` provider: PyTorch on a machine without CUDA).

    Returns:
        ``type`` that answers ``torch.cuda.<Kind>Tensor`` for a CPU tensor while a function of
        :data:`MEGATRON_TYPE_CHECKS` runs, and PyTorch's own answer everywhere else; conversions untouched.
    """

    @functools.wraps(type_method)
    def type_(self: Any, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        if dtype is None and not kwargs:
            name = type_method(self)
            if _CUDA_NAMES.get() and isinstance(name, str) and name.startswith("torch.") \
                    and not name.startswith("torch.cuda."):
                return "torch.cuda." + name[len("torch."):]
            return name
        return type_method(self, dtype, non_blocking, **kwargs)

    return type_


class _CpuCudaTensorType(type):
    """Metaclass of a ``torch.cuda.<Kind>Tensor`` on the CPU backend: no tensor is an instance (every tensor is a
    CPU one, as PyTorch's CPU tensors are not ``torch.cuda.FloatTensor``); calling it builds what MSAdapter's did."""

    construct: Callable[..., Any]

    def __instancecheck__(cls, instance: Any) -> bool:
        return False

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return subclass is cls

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.construct(*args, **kwargs)


def cpu_cuda_tensor_type_wrapper(name: str) -> Callable[[Any], Any]:
    """Return the wrapper that gives ``torch.cuda.<name>`` for the CPU backend in place of MSAdapter's.

    MSAdapter's ``torch.cuda.FloatTensor`` (and Half, BFloat16, Long, Int) is the Tensor class, so
    ``isinstance(t, torch.cuda.FloatTensor)`` held for every tensor, an integer one too: megatron's
    ``Float16Module`` (``--bf16``/``--fp16``) converted the token ids to bfloat16 by that test
    (``fp32_to_float16``) and the embedding refused them. Calling the type still builds a tensor as before.
    """

    def cpu_cuda_tensor_type(original: Any) -> Any:
        return _CpuCudaTensorType(name, (), {"construct": staticmethod(original), "__module__": "torch.cuda",
                                             "__doc__": f"torch.cuda.{name} on the CPU backend: no tensor is one"})

    return cpu_cuda_tensor_type
