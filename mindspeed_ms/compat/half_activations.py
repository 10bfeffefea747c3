"""Half-precision sigmoid, tanh, softmax and tanh-GeLU computed as PyTorch's CPU kernels compute them.

PyTorch's CPU kernels compute a float16 or bfloat16 sigmoid / tanh / softmax in float32 and round the result once;
autograd saves that *rounded* output, and the backward kernel widens it to float32 again: sigmoid
``grad * (1 - y) * y``, tanh ``grad * (1 - y * y)``, softmax ``(grad - sum(grad * y)) * y`` (float32, in that
order; float16 sigmoid rounds every step to float16), rounded once to the input's dtype. On MindSpore's CPU backend
the forward ran in float32 and was cast back (:mod:`.float16_ops`, :mod:`.bfloat16_ops`), and autograd differentiated
through the casts: the gradient came from the float32 output, not the rounded one (against PyTorch 307 of 512
float16 sigmoid gradients differed by a step, 263 bfloat16; tanh 416 bfloat16, softmax 149 bfloat16). MindSpore's
float16 Tanh kernel computed in half precision (13 of 512 values off), and its float32 Softmax's exp is off by up to
~40 ulp (2 of 512 float16 values off after rounding).

Here an autograd Function does what PyTorch does: the forward runs the wrapped op on the float32 copy (every float32
repair under this wrap applies; softmax: PyTorch's arithmetic in NumPy, :func:`.host_arithmetic.softmax_forward`)
and rounds once; the backward computes the formula above from the saved half-precision output. Other dtypes,
``dtype=`` calls and softmax without an integer ``dim`` go to the wrapped op. :func:`tanh_gelu_wrapper`: the same
for ``F.gelu(approximate='tanh')``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.function_grads import own_function

__all__ = ["sigmoid_wrapper", "softmax_wrapper", "tanh_gelu_wrapper", "tanh_wrapper"]


def _sigmoid_grad(grad: Any, y: Any, dim: Any, dtype: Any) -> Any:
    import mindspore
    from mindspore import ops

    if dtype is not mindspore.float16:
        return ops.mul(ops.mul(grad, ops.sub(1.0, y)), y)
    # PyTorch's float16 kernel (unlike its bfloat16 one) rounds every step to float16
    float16, float32 = mindspore.float16, mindspore.float32

    def step(value: Any) -> Any:
        return ops.cast(ops.cast(value, float16), float32)

    return ops.mul(step(ops.mul(grad, step(ops.sub(1.0, y)))), y)


def _tanh_grad(grad: Any, y: Any, dim: Any, dtype: Any) -> Any:
    from mindspore import ops

    return ops.mul(grad, ops.sub(1.0, ops.mul(y, y)))


def _softmax_grad(grad: Any, y: Any, dim: Any, dtype: Any) -> Any:
    from mindspore import ops

    return ops.mul(ops.sub(grad, ops.sum(ops.mul(grad, y), dim, keepdim=True)), y)


def _softmax_float32(wide: Any, dim: int) -> Any:
    """PyTorch's float32 softmax arithmetic (:func:`.host_arithmetic.softmax_forward`: NumPy's exp, within an ulp;
    MindSpore's Softmax kernel's exp is off by up to ~40) of a float32 tensor over ``dim``, as a new tensor."""
    import numpy as np
    from mindspore import Tensor

    from mindspeed_ms.compat.host_arithmetic import softmax_forward

    values = np.moveaxis(wide.asnumpy(), dim, -1)
    rows = np.ascontiguousarray(values).reshape(-1, values.shape[-1]) if values.size else values
    result = softmax_forward(rows).reshape(values.shape) if values.size else values
    return Tensor.from_numpy(np.ascontiguousarray(np.moveaxis(result, -1, dim)))


@functools.cache
def _function(gradient: Callable[..., Any]) -> Any:
    """The autograd Function whose backward is ``gradient(grad, y, dim, dtype)`` in float32 (built on first use)."""
    import mindspore
    float32 = mindspore.float32

    class HalfOutputGradient(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``op`` in float32 rounded once; the gradient from the rounded output."""

        @staticmethod
        def forward(ctx: Any, input: Any, op: Any, dim: Any) -> Any:
            dtype = input.dtype
            wide = input.astype(float32)
            result = op(wide) if dim is None else _softmax_float32(wide, dim)
            y = result.astype(dtype) if result.dtype is not dtype else result
            ctx.save_for_backward(y)
            ctx.dim = dim
            return y

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (y,) = ctx.saved_tensors
            dtype = y.dtype
            wide = gradient(grad.astype(float32), y.astype(float32), ctx.dim, dtype)
            return wide.astype(dtype), None, None

    return HalfOutputGradient


@functools.lru_cache(maxsize=1)
def _half() -> tuple[Any, Any]:
    import mindspore

    return mindspore.float16, mindspore.bfloat16


def _unary_wrapper(op: Callable[..., Any], gradient: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(op)
    def unary(input: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or getattr(input, "_dtype", None) not in _half():
            return op(input, *args, **kwargs)
        return _function(gradient).apply(input, op, None)

    return unary


def sigmoid_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``sigmoid`` of float16/bfloat16 with PyTorch's gradient from the rounded output."""
    return _unary_wrapper(op, _sigmoid_grad)


def tanh_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``tanh`` of float16/bfloat16 with PyTorch's gradient from the rounded output."""
    return _unary_wrapper(op, _tanh_grad)


def softmax_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``softmax(input, dim)`` of float16/bfloat16 (no ``dtype``) with PyTorch's gradient from the rounded output."""

    @functools.wraps(op)
    def softmax(input: Any, *args: Any, **kwargs: Any) -> Any:
        dim = args[0] if args else kwargs.get("dim")
        if (getattr(input, "_dtype", None) not in _half() or len(args) > 1 or kwargs.get("dtype") is not None
                or set(kwargs) - {"dim", "dtype", "_stacklevel"} or isinstance(dim, bool) or not isinstance(dim, int)
                or not -len(input._shape) <= dim < len(input._shape)):  # 0-d, out of range: the op's own answer
            return op(input, *args, **kwargs)
        return _function(_softmax_grad).apply(input, op, dim)

    return softmax



#: PyTorch's float32 constants of the tanh approximation (ATen's GeluKernelImpl / GeluBackwardKernelImpl)
_BETA = 0.7978845608028654  # M_SQRT2 * M_2_SQRTPI * 0.5
_KAPPA = 0.044715


def _tanh_float32(value: Any) -> Any:
    """tanh of a float32 tensor through float64, rounded once (MindSpore's float32 kernel is off by up to 1e-4)."""
    import mindspore
    from mindspore import ops

    return ops.cast(ops.tanh(ops.cast(value, mindspore.float64)), mindspore.float32)


@functools.lru_cache(maxsize=1)
def _tanh_gelu_function() -> Any:
    """The autograd Function of the tanh-approximated gelu in PyTorch's float32 arithmetic (built on first use)."""
    import mindspore
    import numpy as np
    from mindspore import ops
    float32 = mindspore.float32
    beta, kappa = float(np.float32(_BETA)), float(np.float32(_KAPPA))
    three_kappa = float(np.float32(3.0) * np.float32(_KAPPA))

    def inner(x: Any, x_cube: Any) -> Any:
        return ops.mul(ops.add(x, ops.mul(x_cube, kappa)), beta)

    class TanhGelu(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """``0.5 x (1 + tanh(beta (x + kappa x^3)))`` and its gradient, in float32, rounded once."""

        @staticmethod
        def forward(ctx: Any, input: Any) -> Any:
            x = input.astype(float32)
            ctx.save_for_backward(x)
            ctx.dtype = input.dtype
            t = _tanh_float32(inner(x, ops.mul(ops.mul(x, x), x)))
            return ops.mul(ops.mul(x, 0.5), ops.add(t, 1.0)).astype(input.dtype)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            x_sq = ops.mul(x, x)
            t = _tanh_float32(inner(x, ops.mul(x_sq, x)))
            left_derivative = ops.mul(ops.add(t, 1.0), 0.5)
            tanh_derivative = ops.sub(1.0, ops.mul(t, t))
            inner_derivative = ops.mul(ops.add(ops.mul(x_sq, three_kappa), 1.0), beta)
            right_derivative = ops.mul(ops.mul(ops.mul(x, 0.5), tanh_derivative), inner_derivative)
            wide = ops.mul(grad.astype(float32), ops.add(left_derivative, right_derivative))
            return wide.astype(ctx.dtype)

    return TanhGelu


def tanh_gelu_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``F.gelu(x, approximate='tanh')`` of float16/bfloat16 in PyTorch's float32 arithmetic, rounded once.

    MindSpore's GeLU has no bfloat16 CPU kernel (TypeError), and its float32 GeLU / GeLUGrad kernels use a tanh off by
    up to ~1e-4 for 3 < |x| < 7 (:mod:`.conformance_misc`), which ``1 + tanh`` magnifies where it nearly cancels: half
    precision gradients there were a step off PyTorch's. Here ATen's formula, operation by operation in float32, with
    a tanh rounded from float64.
    """

    @functools.wraps(op)
    def gelu(input: Any, *args: Any, **kwargs: Any) -> Any:
        if (getattr(input, "_dtype", None) not in _half() or args or set(kwargs) != {"approximate"}
                or kwargs["approximate"] != "tanh" or not getattr(input, "_shape", None)):
            return op(input, *args, **kwargs)
        return _tanh_gelu_function().apply(input)

    return gelu
