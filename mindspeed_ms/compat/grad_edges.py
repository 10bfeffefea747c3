"""PyTorch's gradients at the edges where MindSpore's backward formulas give nan, or its forward refuses
(tests/conformance/cases/ops_special_grad.py finds each against real PyTorch 2.13).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1:

- ``norm`` / ``linalg.vector_norm`` (p = 2, ``"fro"``, finite p > 1) of a zero slice: MindSpore's backward
  ``x / norm`` is ``0 / 0``, nan (PyTorch masks it: 0). :func:`norm_wrapper` keeps the forward's bits and, only
  for an input that requires a gradient, attaches PyTorch's ``norm_backward``.
- ``F.normalize`` ignores ``eps`` (``input / norm``: nan for a zero row, huge for a tiny one): PyTorch's
  ``input / norm.clamp_min(eps)``.
- ``F.dropout(p=1)`` raises (MindSpore's keep_prob must be > 0); PyTorch multiplies by zero.
- ``pow(x, 0)``: MindSpore's backward ``0 * x ** -1`` is nan at ``x == 0`` (PyTorch: 0 for the zero exponent).
- ``a / b`` with a zero in ``b``: the forward repair of :mod:`.ieee_division` (a select between two quotients) left
  nan gradients (the select's zero times the kernel's ``g / 0``); :func:`zero_divisor_quotient` gives the repaired
  quotient PyTorch's ``div`` backward (``g / b`` and ``-g * (a / b) / b``, IEEE's division by a signed zero).

Nothing here runs on the common path: the norm's Function only for an input that requires a gradient, the others
behind a Python comparison (``p == 1``, ``exponent == 0``) or on the rare path that already found a zero divisor.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

__all__ = ["norm_wrapper", "norm_backward", "normalize", "normalize_wrapper", "dropout_wrapper", "pow_wrapper",
           "pow_backward", "zero_divisor_quotient", "logsumexp_gradient", "sign_wrapper", "cumprod_wrapper",
           "cumprod_backward", "bfloat16_log_softmax_wrapper", "cross_entropy_wrapper", "logsigmoid", "logsigmoid_wrapper"]


def _float_tensor(value: Any) -> bool:
    from mindspore import Tensor

    return isinstance(value, Tensor) and value.is_floating_point()


def _wants_grad(value: Any) -> bool:
    """Whether autograd records ``value`` (a float tensor requiring a gradient, grad mode on): the cheap attribute
    first, so a tensor without a gradient costs one attribute read."""
    if not getattr(value, "requires_grad", False):
        return False
    import msadapter

    return _float_tensor(value) and msadapter.is_grad_enabled()


# --- norms ---------------------------------------------------------------------------------------------------


def _norm_power(p: Any) -> float | None:
    """The power of a norm whose backward divides by the norm (2, "fro", finite p > 1), None for the others."""
    if p is None or p == "fro":
        return 2.0
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or p <= 1:
        return None
    return float(p)


@functools.lru_cache(maxsize=1)
def _norm_function() -> Any:
    from msadapter.autograd import Function

    class ZeroSafeNorm(Function):  # type: ignore[misc]  # MSAdapter's classes are untyped
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
            if not _wants_grad(input):
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


# --- dropout, pow ----------------------------------------------------------------------------------------------


def dropout_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.dropout(input, p=0.5, training=True, inplace=False)``: ``p == 1`` in training is ``input * 0``
    (PyTorch; MindSpore refuses a keep probability of 0)."""

    @functools.wraps(op)
    def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:  # noqa: A002
        if p == 1 and training and _float_tensor(input):
            return input.mul_(0.0) if inplace else input * 0.0
        return op(input, p, training, inplace)

    return dropout


def pow_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``pow(input, exponent)``: a zero Python exponent gives PyTorch's zero gradient (MindSpore's backward
    ``0 * x ** -1`` is nan at ``x == 0``); every other call is the op's."""

    @functools.wraps(op)
    def power(input: Any, exponent: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if not isinstance(exponent, (int, float)):
            if (_wants_grad(exponent) or (_wants_grad(input) and _float_tensor(exponent))) and not args and not kwargs:
                return _pow_function().apply(input, exponent, lambda: op(input, exponent))
            return op(input, exponent, *args, **kwargs)
        result = op(input, exponent, *args, **kwargs)
        if exponent == 0 and not isinstance(exponent, bool) and _wants_grad(input) and not args and not kwargs:
            return _with_zero_gradient(result, input)
        return result

    return power


def _with_zero_gradient(result: Any, input: Any) -> Any:
    """``result``'s values with a gradient of zeros to ``input`` (a select that passes none to its unchosen side;
    the select's backward sums a broadcast ``input``'s share)."""
    from mindspore import ops

    return ops.where(ops.ones(tuple(result.shape), _bool()), ops.stop_gradient(result), input)


def sign_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``sign(input)``: for an input that requires a gradient, PyTorch's gradient of zeros (MindSpore's sign
    has none: ``x.grad`` stayed None)."""

    @functools.wraps(op)
    def sign(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        result = op(input, *args, **kwargs)
        if _wants_grad(input) and not args and not kwargs:
            return _with_zero_gradient(result, input)
        return result

    return sign


@functools.lru_cache(maxsize=1)
def _cumprod_function() -> Any:
    from msadapter.autograd import Function

    class CumprodThroughZeros(Function):  # type: ignore[misc]  # MSAdapter's classes are untyped
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
            values = cumprod_backward(_host32(grad), _host32(input), _host32(result), dim)
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
    """Wrap ``cumprod(input, dim, ...)``: for a float input that requires a gradient and holds a zero, PyTorch's
    exact backward (MindSpore's divides by the input: nan); every other call is the op's."""

    @functools.wraps(op)
    def cumprod(input: Any, dim: Any = None, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if (not _wants_grad(input) or args or set(kwargs) - {"dim"} or str(input.dtype) in ("BFloat16",)
                or not isinstance(kwargs.get("dim", dim), int)):
            return op(input, dim, *args, **kwargs) if dim is not None else op(input, *args, **kwargs)
        dim = kwargs.pop("dim", dim)
        if bool(np.all(_host32(input))):  # no zero: MindSpore's backward is PyTorch's formula
            return op(input, dim)
        rank = max(len(input.shape), 1)
        return _cumprod_function().apply(input, dim % rank, lambda: op(input, dim))

    return cumprod


@functools.lru_cache(maxsize=1)
def _log_softmax_function() -> Any:
    from msadapter.autograd import Function

    class BFloat16LogSoftmax(Function):  # type: ignore[misc]  # MSAdapter's classes are untyped
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


def cross_entropy_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.cross_entropy(input, target, weight=None, ignore_index=-100, reduction='mean', ...)``: with every
    target ignored, the mean's gradient is PyTorch's zeros (MindSpore's is ``0 / 0`` weight: nan); the loss stays
    nan as in PyTorch. The targets are read on the host only for an input that requires a gradient."""

    @functools.wraps(op)
    def cross_entropy(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        result = op(input, target, *args, **kwargs)
        named = dict(zip(("weight", "ignore_index", "reduction", "label_smoothing"), args), **kwargs)
        if (not _wants_grad(input) or named.get("reduction", "mean") != "mean" or _float_tensor(target)
                or not hasattr(target, "asnumpy")):
            return result
        if not bool(np.all(target.asnumpy() == named.get("ignore_index", -100))):
            return result
        from mindspore import ops

        return ops.where(ops.ones((), _bool()), ops.stop_gradient(result), input.sum().astype(result.dtype))

    return cross_entropy


@functools.lru_cache(maxsize=1)
def _logsigmoid_function() -> Any:
    from msadapter.autograd import Function

    class LogSigmoid(Function):  # type: ignore[misc]  # MSAdapter's classes are untyped
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
        return logsigmoid(input) if _float_tensor(input) else op(input)

    return wrapped


@functools.lru_cache(maxsize=1)
def _pow_function() -> Any:
    from msadapter.autograd import Function

    class TensorPower(Function):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``pow`` with a tensor exponent (the op's values) and PyTorch's ``pow_backward_self/_exponent``."""

        @staticmethod
        def forward(ctx: Any, base: Any, exponent: Any, compute: Callable[[], Any]) -> Any:
            result = compute()
            ctx.saved = (base, exponent, result, _float_tensor(base) and bool(base.requires_grad),
                         bool(exponent.requires_grad))
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            base, exponent, result, base_grad, exponent_grad = ctx.saved
            del ctx.saved
            grad_base, grad_exponent = pow_backward(grad, base, exponent, result, base_grad, exponent_grad)
            return grad_base, grad_exponent, None

    return TensorPower


def pow_backward(grad: Any, base: Any, exponent: Any, result: Any, base_grad: bool,
                 exponent_grad: bool) -> tuple[Any, Any]:
    """PyTorch's gradients of ``base ** exponent`` (tensor exponent): ``g * e * b ** (e - 1)``, 0 where ``e == 0``;
    ``g * result * log(b)``, 0 where ``b == 0`` and ``e >= 0``."""
    from mindspore import Tensor, mint, ops

    base_tensor = base if isinstance(base, Tensor) else Tensor(base, exponent.dtype)
    zero = ops.zeros_like(grad)
    grad_base = grad_exponent = None
    if base_grad:
        values = mint.mul(grad, mint.mul(exponent, mint.pow(base_tensor, mint.sub(exponent, 1))))
        grad_base = _sum_to(mint.where(mint.eq(exponent, 0), zero, values), tuple(base_tensor.shape))
    if exponent_grad:
        skip = mint.logical_and(mint.eq(base_tensor, 0), mint.ge(exponent, 0))
        values = mint.mul(grad, mint.where(skip, zero, mint.mul(result, mint.log(base_tensor))))
        grad_exponent = _sum_to(values, tuple(exponent.shape))
    return grad_base, grad_exponent


def _sum_to(values: Any, shape: tuple[int, ...]) -> Any:
    """``values`` summed over the dimensions it was broadcast along to reach from ``shape``."""
    extra = len(values.shape) - len(shape)
    if extra:
        values = values.sum(tuple(range(extra)))
    axes = tuple(i for i, size in enumerate(shape) if size == 1 and values.shape[i] != 1)
    return values.sum(axes, keepdims=True) if axes else values


@functools.lru_cache(maxsize=1)
def _logsumexp_function() -> Any:
    from msadapter.autograd import Function

    class LogSumExp(Function):  # type: ignore[misc]  # MSAdapter's classes are untyped
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
    if not _wants_grad(input):
        return result
    from mindspore import ops

    return _logsumexp_function().apply(input, ops.stop_gradient(result), _dims(input, dim), bool(keepdim))


@functools.lru_cache(maxsize=1)
def _bool() -> Any:
    import mindspore

    return mindspore.bool_


# --- division by a zero ----------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _division_function() -> Any:
    from msadapter.autograd import Function

    class ZeroDivisorQuotient(Function):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """The repaired quotient ``a / b`` with PyTorch's ``div`` backward computed by IEEE arithmetic (NumPy)."""

        @staticmethod
        def forward(ctx: Any, dividend: Any, divisor: Any, quotient: Any) -> Any:
            # (forward runs without grad mode: the operands' own flags)
            ctx.saved = (dividend, divisor, _float_tensor(dividend) and bool(dividend.requires_grad),
                         _float_tensor(divisor) and bool(divisor.requires_grad))
            return quotient

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            dividend, divisor, dividend_grad, divisor_grad = ctx.saved
            del ctx.saved
            g, a, b = (_host32(value) for value in (grad, dividend, divisor))
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                grad_a = np.divide(g, b)
                grad_b = -g * np.divide(np.divide(a, b), b)
            return (_to_like(grad_a, dividend) if dividend_grad else None,
                    _to_like(grad_b, divisor) if divisor_grad else None, None)

    return ZeroDivisorQuotient


def _host32(value: Any) -> np.ndarray:
    from mindspore import Tensor

    if not isinstance(value, Tensor):
        return np.asarray(value, dtype=np.float32)
    if str(value.dtype) in ("BFloat16", "Float16"):
        import mindspore

        value = value.astype(mindspore.float32)
    return np.asarray(value.asnumpy())


def _to_like(values: np.ndarray, like: Any) -> Any:
    """``values`` summed to ``like``'s shape (a broadcast operand) as a tensor of ``like``'s dtype."""
    from mindspore import Tensor

    shape = tuple(like.shape)
    extra = values.ndim - len(shape)
    if extra:
        values = values.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, size in enumerate(shape) if size == 1 and values.shape[i] != 1)
    if axes:
        values = values.sum(axis=axes, keepdims=True)
    dtype = like.dtype
    result = Tensor(np.ascontiguousarray(values, dtype=values.dtype if str(dtype) == "Float64" else np.float32))
    return result if result.dtype == dtype else result.astype(dtype)


def zero_divisor_quotient(dividend: Any, divisor: Any, quotient: Any) -> Any:
    """``quotient`` (the repaired ``dividend / divisor`` of a divisor holding a zero) with PyTorch's gradients for
    the operands that require one; as it is when neither does."""
    if not (_wants_grad(dividend) or _wants_grad(divisor)):
        return quotient
    from mindspore import ops

    return _division_function().apply(dividend, divisor, ops.stop_gradient(quotient))
