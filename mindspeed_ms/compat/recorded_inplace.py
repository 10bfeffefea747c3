"""``t.mul_(c)`` / ``t.div_(c)`` / ``t /= c`` of a tensor autograd records, computed on the host (MindSpore's CPU).

megatron's schedules divide every micro-batch's loss in place: ``output_tensor /= num_tokens`` and ``output_tensor /=
num_microbatches``, a 0-d float32 tensor in autograd's record, by a number or an integer tensor. MindSpore's CPU
backend has no in-place kernels, so :mod:`.inplace_ops` reproduced PyTorch's in-place op out of place: a recorded
clone of ``self`` (the op's backward may need its original value), the Div kernel, the check of zero divisors, the
recorded copy that writes the quotient into ``self`` and rebases its history: ~225 us a call above the tensor's
own cost, ~390 us with an integer divisor (measured at 0-d under the adaptor's runtime settings).

Where the operand does not require a gradient, the op's backward needs the operand only (PyTorch's ``mul``:
``grad * other``, ``div``: ``grad / other``): no clone. :func:`binary_recorded_on_host` computes the result as one
host Function (NumPy's float32 multiply or divide over ``self``'s host memory into a new tensor; its backward the
same ufunc of the gradient and the operand) and the recorded copy writes it into ``self``, as before. NumPy's
float32 operations round each element as PyTorch's kernels do (IEEE: a division by zero gives PyTorch's infinities
and NaN, subnormals kept); a Python number is cast to float32 first as PyTorch's kernels cast a scalar operand. The
same bits forward and backward.

Taken for: ``self`` a contiguous float32 tensor autograd records that owns its memory (not a view), on MindSpore's
CPU backend; the operand a Python ``int``/``float`` (not a bool), or a float32 tensor that does not require a
gradient and whose shape broadcasts to ``self``'s (the result keeps ``self``'s shape). PyTorch saves a tensor
operand for the backward and refuses it there when it was written in place since: so does the Function (the
operand's version counter, checked in the backward). Everything else takes :mod:`.inplace_ops`' path.
"""

from __future__ import annotations

import functools
from typing import Any

from mindspeed_ms.compat.function_grads import check_versions, own_function
from mindspeed_ms.compat.host_arithmetic import ufunc_into
from mindspeed_ms.compat.host_memory import host_array, host_memory_reason
from mindspeed_ms.compat.inplace import broadcasts_to, owns_memory, write_back
from mindspeed_ms.compat.inplace_checks import records_grad

__all__ = ["binary_recorded_on_host", "recorded_float32_on_host"]


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def recorded_float32_on_host(tensor: Any) -> bool:
    """Whether ``tensor`` is a contiguous float32 tensor autograd records that owns its memory, on MindSpore's CPU
    backend (whose in-place arithmetic :func:`binary_recorded_on_host` can compute on the host)."""
    return (getattr(tensor, "_dtype", None) is _float32() and host_memory_reason() is None and records_grad(tensor)
            and owns_memory(tensor) and tensor.is_contiguous())


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""

    from mindspeed_ms.compat.host_outputs import new_float32

    class HostBinary(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``ufunc(self, operand)`` into a new tensor; the gradient of ``self``: ``ufunc(grad, operand)``."""

        @staticmethod
        def forward(ctx: Any, tensor: Any, plan: tuple[Any, Any, Any, Any]) -> Any:
            ufunc, operand = plan[0], plan[1]
            result, out = new_float32(tuple(tensor._shape))
            ufunc_into(ufunc, host_array(tensor), operand, out)
            ctx.plan = plan
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            ufunc, operand, saved, version = ctx.plan
            if saved is not None:  # PyTorch's check of the operand it saved
                check_versions(ctx, (saved,), (version,))
            result, out = new_float32(tuple(grad._shape))
            ufunc_into(ufunc, host_array(grad), operand, out)
            return result, None

    return HostBinary


def _operand(tensor: Any, other: Any, original: Any) -> tuple[Any, Any] | None:
    """``other`` as NumPy's operand and the tensor whose version the backward checks (None for a number); None where
    not taken. ``original``: the operand as the caller was given it (an integer tensor ``other`` was converted
    from: PyTorch saves that one)."""
    import numpy as np

    kind = type(other)
    if kind is float or kind is int:
        with np.errstate(all="ignore"):
            return np.float32(other), None  # beyond float32's range: an infinity, as PyTorch's cast
    shape = getattr(other, "_shape", None)
    if (shape is None or getattr(other, "_dtype", None) is not _float32() or records_grad(other)
            or not broadcasts_to(tuple(shape), tuple(tensor._shape))):
        return None
    return np.array(host_array(other)), original  # a copy: the backward's operand as it was now


def binary_recorded_on_host(op: str, tensor: Any, other: Any, ufunc: str, original: Any = None) -> bool:
    """``tensor = tensor <ufunc> other`` for a ``tensor`` autograd records (see the module's docstring), written
    into it by the recorded copy (:func:`.inplace.write_back`), where the caller ran PyTorch's checks.

    Args:
        op: the in-place method (``"mul_"``, ``"div_"``; for a refusal's message).
        tensor: ``self``.
        other: the operand (a float32 tensor, or a Python number).
        ufunc: NumPy's name of the operation (``"multiply"``, ``"divide"``).
        original: the operand the caller was given, where ``other`` is its float32 conversion (else ``other``).

    Returns:
        True when done; False (nothing done) otherwise: the caller's kernels then.
    """
    import numpy as np

    if not recorded_float32_on_host(tensor):
        return False
    operand = _operand(tensor, other, other if original is None else original)
    if operand is None:
        return False
    saved = operand[1]
    plan = (getattr(np, ufunc), operand[0], saved, None if saved is None else saved._version)
    write_back(op, tensor, _function().apply(tensor, plan))
    return True
