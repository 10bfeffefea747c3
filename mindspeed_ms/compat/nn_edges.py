"""PyTorch's nn functions at the edges where MSAdapter's differ (tests/conformance/cases/ops_special_grad.py finds
each against real PyTorch 2.13; the tensor-level gradient fixes are in :mod:`.grad_edges`):

- ``F.normalize`` ignores ``eps`` (``input / norm``: nan for a zero row, huge for a tiny one): PyTorch's
  ``input / norm.clamp_min(eps)``.
- ``F.dropout(p=1)`` raises (MindSpore's keep_prob must be > 0); PyTorch multiplies by zero.
- bfloat16 ``log_softmax`` has no CPU kernel: float32 and rounded once, the backward from the rounded output (PyTorch's
  CPU kernel).
- ``F.cross_entropy`` (mean) with every target ignored has a nan gradient (PyTorch: zeros).
- ``F.logsigmoid`` is -inf at -100 and its gradient nan at -inf (PyTorch: ``min(x, 0) - log1p(exp(-|x|))``).

Nothing here costs on the common path but a Python comparison, except cross_entropy's host read of the targets for
an input that requires a gradient (the mean reduction only).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.grad_edges import float_tensor, wants_grad

__all__ = ["normalize", "normalize_wrapper", "dropout_wrapper", "bfloat16_log_softmax_wrapper", "cross_entropy_wrapper",
           "dtype_first_log_softmax_wrapper",
           "logsigmoid", "logsigmoid_wrapper"]


@functools.lru_cache(maxsize=1)
def _bool() -> Any:
    import mindspore

    return mindspore.bool_


def normalize(input: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Any:  # noqa: A002
    """``F.normalize``: PyTorch's ``input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)``."""
    denominator = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    result = input / denominator
    if out is not None:
        out.copy_(result)
        return out
    return result


def normalize_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Replace MSAdapter's ``F.normalize`` (which drops ``eps``) by :func:`normalize`."""

    @functools.wraps(op)
    def wrapped(input: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Any:  # noqa: A002
        return normalize(input, p, dim, eps, out)

    return wrapped



def dropout_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.dropout(input, p=0.5, training=True, inplace=False)``: ``p == 1`` in training is ``input * 0``
    (PyTorch; MindSpore refuses a keep probability of 0)."""

    @functools.wraps(op)
    def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:  # noqa: A002
        if p == 1 and training and float_tensor(input):
            return input.mul_(0.0) if inplace else input * 0.0
        return op(input, p, training, inplace)

    return dropout


@functools.lru_cache(maxsize=1)
def _log_softmax_function() -> Any:
    class BFloat16LogSoftmax(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """bfloat16 log_softmax as PyTorch's CPU kernel computes it: in float32, rounded once; the backward
        ``g - exp(y) * sum(g)`` in float32 from the *rounded* output ``y``, rounded once."""

        @staticmethod
        def forward(ctx: Any, input: Any, dim: int, compute: Callable[[Any], Any]) -> Any:
            import mindspore

            result = compute(input.astype(mindspore.float32)).astype(mindspore.bfloat16)
            ctx.saved = (result, dim)
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            import mindspore
            from mindspore import mint

            result, dim = ctx.saved
            del ctx.saved
            g, y = grad.astype(mindspore.float32), result.astype(mindspore.float32)
            values = mint.sub(g, mint.mul(mint.exp(y), g.sum(dim, keepdim=True)))
            return values.astype(mindspore.bfloat16), None, None

    return BFloat16LogSoftmax


def bfloat16_log_softmax_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``log_softmax(input, dim)`` (``F.log_softmax``/``Tensor.log_softmax``): a bfloat16 input (no CPU
    kernel: TypeError) goes through :class:`BFloat16LogSoftmax`; every other call is the op's."""

    @functools.wraps(op)
    def log_softmax(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if str(getattr(input, "dtype", "")) != "BFloat16" or kwargs.get("dtype") is not None:
            return op(input, *args, **kwargs)
        dim = args[0] if args else kwargs.get("dim")
        if not isinstance(dim, int) or len(args) > 1 or set(kwargs) - {"dim", "dtype"}:
            return op(input, *args, **kwargs)
        rank = max(len(input.shape), 1)
        return _log_softmax_function().apply(input, dim % rank, lambda x: op(x, dim))

    return log_softmax


def dtype_first_log_softmax_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``log_softmax(input, dim, dtype)`` (``F.log_softmax``/``Tensor.log_softmax``): with ``dtype``, the input is
    cast first and the log-softmax computed in ``dtype``, as PyTorch does (MSAdapter computed in the input's dtype
    and cast the result: a float16 input with ``dtype=torch.float32`` was ~3e-4 off, silently; bfloat16 raised)."""

    @functools.wraps(op)
    def log_softmax(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
        if dtype is None or len(args) > 2 or set(kwargs) - {"dim", "dtype"} or getattr(input, "dtype", dtype) == dtype:
            return op(input, *args, **kwargs)
        dim = args[0] if args else kwargs.get("dim")
        return op(input.to(dtype), dim)

    return log_softmax


def cross_entropy_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.cross_entropy(input, target, weight=None, ignore_index=-100, reduction='mean', ...)``: with every
    target ignored, the mean's gradient is PyTorch's zeros (MindSpore's is ``0 / 0`` weight: nan); the loss stays
    nan as in PyTorch. The targets are read on the host only for an input that requires a gradient. A float16 input
    gives a float16 loss, as PyTorch (MSAdapter's is float32: computed in float32, now rounded once to float16)."""

    @functools.wraps(op)
    def cross_entropy(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        result = op(input, target, *args, **kwargs)
        if str(getattr(input, "dtype", "")) == "Float16" and str(getattr(result, "dtype", "")) == "Float32":
            result = result.to(input.dtype)
        named = dict(zip(("weight", "ignore_index", "reduction", "label_smoothing"), args), **kwargs)
        if (not wants_grad(input) or named.get("reduction", "mean") != "mean" or float_tensor(target)
                or not hasattr(target, "asnumpy")):
            return result
        if not bool(np.all(target.asnumpy() == named.get("ignore_index", -100))):
            return result
        from mindspore import ops

        return ops.where(ops.ones((), _bool()), ops.stop_gradient(result), input.sum().astype(result.dtype))

    return cross_entropy


@functools.lru_cache(maxsize=1)
def _logsigmoid_function() -> Any:
    class LogSigmoid(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """PyTorch's CPU log_sigmoid: ``min(x, 0) - log1p(exp(-|x|))``, its backward
        ``g * (max_deriv - sign * z / (1 + z))`` with ``z = exp(-|x|)`` (exact at +-inf and for large ``|x|``)."""

        @staticmethod
        def forward(ctx: Any, input: Any) -> Any:
            from mindspore import ops

            x = _widened(input)
            result = ops.sub(ops.minimum(x, ops.zeros((), x.dtype)), ops.log1p(ops.exp(ops.neg(ops.abs(x)))))
            ctx.saved = input
            return result.astype(input.dtype)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            from mindspore import ops

            input = ctx.saved
            del ctx.saved
            x = _widened(input)
            z = ops.exp(ops.neg(ops.abs(x)))
            ratio = ops.div(z, ops.add(z, 1.0))
            # max_deriv - sign * z / (1 + z): x < 0: 1 - z / (1 + z); else z / (1 + z) (nan stays nan)
            derivative = ops.where(ops.less(x, 0), ops.sub(1.0, ratio), ratio)
            return ops.mul(_widened(grad), derivative).astype(input.dtype)

    return LogSigmoid


def _widened(tensor: Any) -> Any:
    import mindspore

    return tensor.astype(mindspore.float32) if str(tensor.dtype) in ("BFloat16", "Float16") else tensor


def logsigmoid(input: Any) -> Any:  # noqa: A002 - PyTorch's name
    """``F.logsigmoid``: PyTorch's formula (MindSpore's is -inf at -100 and nan in the gradient at -inf)."""
    return _logsigmoid_function().apply(input)


def logsigmoid_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Replace ``F.logsigmoid(input)`` of a float tensor by :func:`logsigmoid`."""

    @functools.wraps(op)
    def wrapped(input: Any) -> Any:  # noqa: A002
        return logsigmoid(input) if float_tensor(input) else op(input)

    return wrapped
