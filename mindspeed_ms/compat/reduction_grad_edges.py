"""PyTorch's gradients of reductions at the edges where MindSpore's backward gives nan or its forward refuses
(tests/conformance/cases/ops_special_grad.py finds each against real PyTorch 2.13).

- ``norm`` / ``linalg.vector_norm`` (p = 2, ``"fro"``, finite p > 1) of a zero slice: MindSpore's backward
  ``x / norm`` is ``0 / 0``, nan (PyTorch masks it: 0). :func:`norm_wrapper` keeps the forward's bits and, only
  for an input that requires a gradient, attaches PyTorch's ``norm_backward``.
- ``logsumexp`` with a +inf in a slice (repaired forward): nan gradients; PyTorch's ``g * exp(x - result)``.
- ``cumprod`` through a zero: nan (PyTorch's exact formula).
- reductions of empty inputs and ``std`` from a zero variance: PyTorch's gradients.

The pointwise edges (pow, sign, division by a zero) are in :mod:`.grad_edges`, the nn-level ones in
:mod:`.nn_edges`. Nothing here runs on the common path: the Functions only for an input that requires a gradient.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.grad_edges import host32, wants_grad

__all__ = ["norm_wrapper", "norm_backward", "logsumexp_gradient", "cumprod_wrapper", "cumprod_backward",
           "empty_reduction_gradient", "std_of_variance"]


def _norm_power(p: Any) -> float | None:
    """The power of a norm whose backward divides by the norm (2, "fro", finite p > 1), None for the others."""
    if p is None or p == "fro":
        return 2.0
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or p <= 1:
        return None
    return float(p)


@functools.lru_cache(maxsize=1)
def _norm_function() -> Any:
    class ZeroSafeNorm(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """A p-norm (computed by ``compute``, the op's own bits) with PyTorch's ``norm_backward``."""

        @staticmethod
        def forward(ctx: Any, input: Any, compute: Callable[[Any], Any], p: float, dims: tuple[int, ...] | None,
                    keepdim: bool) -> Any:
            result = compute(input)
            ctx.saved = (input, result, p, dims, keepdim)
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            input, norm, p, dims, keepdim = ctx.saved
            del ctx.saved
            return norm_backward(grad, input, norm, p, dims, keepdim), None, None, None, None

    return ZeroSafeNorm


def norm_backward(grad: Any, input: Any, norm: Any, p: float, dims: tuple[int, ...] | None, keepdim: bool) -> Any:
    """PyTorch's ``norm_backward`` for ``p > 1``: ``x |x|^(p-2) * grad / norm^(p-1)``, 0 where the norm is 0."""
    from mindspore import mint, ops

    if dims is not None and not keepdim:
        for dim in sorted(dims):
            grad, norm = grad.unsqueeze(dim), norm.unsqueeze(dim)
    if p == 2.0:
        scaled, scale = input, mint.div(grad, norm)
    elif p > 2.0:
        scaled, scale = mint.mul(input, mint.pow(mint.abs(input), p - 2.0)), mint.div(grad, mint.pow(norm, p - 1.0))
    else:
        scaled = mint.mul(mint.sign(input), mint.pow(mint.abs(input), p - 1.0))
        scale = mint.div(grad, mint.pow(norm, p - 1.0))
    scale = ops.masked_fill(scale, mint.eq(norm, 0), 0.0)
    return mint.mul(scaled, scale).astype(input.dtype)


def _dims(input: Any, dim: Any) -> tuple[int, ...] | None:
    if dim is None:
        return None
    rank = len(input.shape)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(d % rank if rank else 0 for d in dims)


def norm_wrapper(ord_name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a norm ``op(input, <ord_name>=..., dim=None, keepdim=False, ...)`` (``torch.norm``/``Tensor.norm``:
    ``p``; ``linalg.vector_norm``: ``ord``): for an input that requires a gradient and a power whose backward
    divides by the norm, the op's result with PyTorch's backward (0 where the norm is 0)."""

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def norm(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - PyTorch's name
            if not wants_grad(input):
                return op(input, *args, **kwargs)
            given = dict(zip((ord_name, "dim", "keepdim"), args))
            if len(args) > 3 or set(given) & set(kwargs):
                return op(input, *args, **kwargs)
            given.update(kwargs)
            default = 2 if ord_name == "ord" else "fro"
            power = _norm_power(given.get(ord_name, default))
            if power is None or set(given) - {ord_name, "dim", "keepdim"} or (
                    given.get(ord_name, default) == "fro" and given.get("dim") is not None
                    and not isinstance(given.get("dim"), int) and len(tuple(given["dim"])) != 1):
                return op(input, *args, **kwargs)
            keepdim = bool(given.get("keepdim", False))
            dims = _dims(input, given.get("dim"))
            return _norm_function().apply(input, lambda x: op(x, *args, **kwargs), power, dims, keepdim)

        return norm

    return wrapper


@functools.lru_cache(maxsize=1)
def _cumprod_function() -> Any:
    class CumprodThroughZeros(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``cumprod`` (the op's values) of an input holding a zero, with PyTorch's exact backward."""

        @staticmethod
        def forward(ctx: Any, input: Any, dim: int, compute: Callable[[], Any]) -> Any:
            result = compute()
            ctx.saved = (input, result, dim)
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            from mindspore import Tensor

            input, result, dim = ctx.saved
            del ctx.saved
            values = cumprod_backward(host32(grad), host32(input), host32(result), dim)
            return Tensor(values).astype(input.dtype), None, None

    return CumprodThroughZeros


def cumprod_backward(grad: np.ndarray, input: np.ndarray, output: np.ndarray, dim: int) -> np.ndarray:
    """PyTorch's ``cumprod_backward`` along ``dim``: before a slice's first zero ``k``, the reversed cumulative sum of
    ``grad * output`` over ``input``; at ``k``, the product before it times ``grad``'s sum weighted by the products
    after it; past ``k``, 0 (``output`` is 0 there; no division by a zero)."""
    moved = [np.moveaxis(a, dim, -1) for a in (grad, input, output)]
    shape = moved[0].shape
    g, x, out = (a.reshape(-1, shape[-1]) for a in moved)
    result = np.zeros_like(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for row in range(x.shape[0]):
            zeros = np.flatnonzero(x[row] == 0)
            k = int(zeros[0]) if zeros.size else x.shape[1]
            result[row, :k] = np.cumsum((g[row, :k] * out[row, :k])[::-1])[::-1] / x[row, :k]
            if k < x.shape[1]:
                before = out[row, k - 1] if k else np.float32(1.0)
                after = np.concatenate(([np.float32(1.0)], np.cumprod(x[row, k + 1:])))
                result[row, k] = before * np.sum(g[row, k:] * after)
    return np.ascontiguousarray(np.moveaxis(result.reshape(shape), -1, dim))


def cumprod_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``cumprod(input, dim, *, dtype=None)``: for a float input that requires a gradient and holds a zero,
    PyTorch's exact backward (MindSpore's divides by the input: nan); every other call is the op's."""

    @functools.wraps(op)
    def cumprod(input: Any, dim: Any = None, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if (not wants_grad(input) or args or set(kwargs) - {"dim", "dtype"} or str(input.dtype) in ("BFloat16",)
                or not isinstance(kwargs.get("dim", dim), int)
                or str(kwargs.get("dtype", input.dtype)) not in (str(input.dtype), "Float32", "Float64")):
            return op(input, dim, *args, **kwargs) if dim is not None else op(input, *args, **kwargs)
        dim = kwargs.pop("dim", dim)
        if kwargs.get("dtype") is not None:  # cumprod(x, dtype=d) is cumprod(x.to(d)), as PyTorch
            input = input.to(kwargs["dtype"])  # noqa: A001
        if bool(np.all(host32(input))):  # no zero: MindSpore's backward is PyTorch's formula
            return op(input, dim)
        rank = max(len(input.shape), 1)
        return _cumprod_function().apply(input, dim % rank, lambda: op(input, dim))

    return cumprod


@functools.lru_cache(maxsize=1)
def _logsumexp_function() -> Any:
    class LogSumExp(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``result`` (logsumexp of ``input`` with PyTorch's infinities) with PyTorch's backward."""

        @staticmethod
        def forward(ctx: Any, input: Any, result: Any, dims: tuple[int, ...] | None, keepdim: bool) -> Any:
            ctx.saved = (input, result, dims, keepdim)
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            from mindspore import mint

            input, result, dims, keepdim = ctx.saved
            del ctx.saved
            if dims is not None and not keepdim:
                for dim in sorted(dims):
                    grad, result = grad.unsqueeze(dim), result.unsqueeze(dim)
            return mint.mul(grad, mint.exp(mint.sub(input, result))).astype(input.dtype), None, None, None

    return LogSumExp


def logsumexp_gradient(input: Any, result: Any, dim: Any, keepdim: bool) -> Any:
    """``result`` (``input``'s logsumexp over ``dim``, repaired for infinities) with PyTorch's gradient
    ``g * exp(x - result)``, for an input that requires one."""
    if not wants_grad(input):
        return result
    from mindspore import ops

    return _logsumexp_function().apply(input, ops.stop_gradient(result), _dims(input, dim), bool(keepdim))


@functools.lru_cache(maxsize=1)
def _empty_function() -> Any:
    class EmptyReduction(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """A reduction's result over an empty input (a constant: 0 for sum, nan for mean), with the input's
        gradient: an empty tensor of its shape (PyTorch's; MindSpore's backward refused the unrecorded constant)."""

        @staticmethod
        def forward(ctx: Any, input: Any, result: Any) -> Any:
            ctx.saved = (tuple(input.shape), input.dtype)
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            from mindspore import ops

            shape, dtype = ctx.saved
            del ctx.saved
            return ops.zeros(shape, dtype), None

    return EmptyReduction


def empty_reduction_gradient(input: Any, result: Any) -> Any:
    """``result`` (a reduction of the empty ``input``, made as a constant) recorded for autograd when ``input``
    requires a gradient; as it is otherwise."""
    if not wants_grad(input):
        return result
    return _empty_function().apply(input, result)


@functools.lru_cache(maxsize=1)
def _std_function() -> Any:
    class StdOfVariance(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``sqrt(variance)`` with PyTorch's ``std_backward``: ``g / (2 * std)``, 0 where the std is 0 (a constant
        slice; MindSpore's sqrt backward gives ``g / 0``, then nan through the variance's backward)."""

        @staticmethod
        def forward(ctx: Any, variance: Any) -> Any:
            from mindspore import mint

            result = mint.sqrt(variance)
            ctx.saved = result
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            from mindspore import mint, ops

            result = ctx.saved
            del ctx.saved
            return ops.masked_fill(mint.div(grad, mint.add(result, result)), mint.eq(result, 0), 0.0)

    return StdOfVariance


def std_of_variance(variance: Any) -> Any:
    """``sqrt(variance)`` for ``torch.std``: with PyTorch's masked backward where autograd records ``variance``."""
    if wants_grad(variance):
        return _std_function().apply(variance)
    from mindspore import mint

    return mint.sqrt(variance)
