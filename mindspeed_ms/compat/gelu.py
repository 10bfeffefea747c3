"""``torch.nn.functional.gelu`` (the erf form) from fast MindSpore CPU kernels, with PyTorch's backward formula.

MSAdapter's ``F.gelu`` calls ``mindspore.ops.gelu``: ``x / sqrt(2)`` (a Div, ~8 ms per million float32 on
CPU), the ``Erf`` kernel, an add of a 0-d tensor (a broadcast AddExt, ~12 ms per million) and two
multiplications; autograd then differentiates each of them (a second Div among them). At megatron's mid
size (512 x 2048 activations) that was ~30 ms forward and ~18 ms backward per layer in the profile of a
training step, against PyTorch's ~0.4 ms and ~2 ms.

Here: ``gelu(x) = (x * 0.5) * (1 + erf(x * M_SQRT1_2))`` with scalar multiplications and additions (fast
kernels) around MindSpore's ``Erf`` (accurate: within 5e-8 of the true erf, 98.6% correctly rounded), and
the backward is PyTorch's formula, ``dy * (0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi))``, in
ten kernels from the saved ``1 + erf`` instead of autograd through the forward (its ``exp`` in float64:
MindSpore's float32 Exp kernel is off by up to ~40 units in the last place).

PyTorch's own CPU kernel approximates erf (Abramowitz and Stegun 7.1.26 in ATen's ``Vectorized<float>::erf``
and oneDNN's ``eltwise_gelu_erf``: absolute error <= 1.5e-7), so results differ from PyTorch's by that
approximation: tests/test_compat_gelu.py measures the bound over a dense grid against the reference
interpreter. Like PyTorch's float32 and bfloat16 kernel where oneDNN / AVX-512 runs it, ``gelu(+-inf)`` and its
gradient are NaN (``x - x`` is added to ``1 + erf``: zero for every finite ``x``; PyTorch's float16 kernel gives
``gelu(+inf) = +inf``, and so does ours for float16); on an AVX2-only CPU (AMD EPYC, 2 Dec) PyTorch's float32
``gelu(+inf)`` is ``+inf``: PyTorch itself differs by machine there (tests/conformance leave float32 +inf out).
``gelu(-0.0)`` is ``-0.0``, and large negative inputs give ``-0.0`` once ``erf`` rounds to -1 in float32.

Contiguous tensors of at least :data:`HOST_ELEMENTS` elements (every non-empty one: megatron's MLP activations at
the mid size, and the tiny model's ``[32, 4, 256]``, where the seven forward and eight backward kernels cost far
more than one host call) run the same float32 operations over their host memory in the optional C extension
``_host_gelu`` (glibc's vector erff, within 7.5e-8 of the true erf, and expf, within a unit in the last place as
PyTorch's; 1-2 ms per million floats where the Erf kernel takes 5-50 ms), straight into new tensors in MindSpore's
memory (``host_outputs.new_float32``, no copy). The backward reads the input's memory; below :data:`COPY_ELEMENTS`
elements the forward keeps a copy of it (a few microseconds), as the input may be a view whose memory no longer
holds it by then. Without the extension or AVX2, MindSpore's kernels run.

float16 and bfloat16 inputs are computed in float32 and rounded once, as PyTorch's CPU kernel does.
Other dtypes (float64: PyTorch's erf is exact there), ``approximate='tanh'`` and 0-d or non-tensor
inputs go to MSAdapter's gelu unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_memory import contiguity_read

__all__ = ["COPY_ELEMENTS", "HOST_ELEMENTS", "erf_gelu_wrapper", "gelu_float32", "gelu_backward_float32", "host_gelu",
           "is_erf_gelu"]

#: From this many elements gelu and its gradient run over host memory (when the C extension is built).
HOST_ELEMENTS = 1

#: Below this many elements the host path keeps a copy of its input for the backward (above: the input's memory).
COPY_ELEMENTS = 65536

_SQRT1_2 = 0.7071067811865476
_BETA = 0.3989422804014327  # M_2_SQRTPI * M_SQRT1_2 * 0.5 = 1 / sqrt(2 pi)


def gelu_float32(x: Any, nan_at_infinity: bool = True) -> tuple[Any, Any]:
    """Return ``(gelu(x), 1 + erf(x / sqrt(2)))`` of a float32 tensor; the second is what the backward needs.

    Args:
        x: a float32 MindSpore tensor.
        nan_at_infinity: NaN at +-inf (PyTorch's float32 and bfloat16 kernel, oneDNN's); False: ``gelu(+inf)`` is
            +inf (its float16 kernel, ATen's). ``gelu(-inf)`` is NaN either way (``-inf * 0``).

    Returns:
        Two float32 tensors of ``x``'s shape.
    """
    from mindspore import ops

    one_plus_erf = ops.add(ops.erf(ops.mul(x, _SQRT1_2)), 1.0)
    if nan_at_infinity:
        one_plus_erf = ops.add(one_plus_erf, ops.sub(x, x))  # + 0 where x is finite, NaN where it is not
    return ops.mul(ops.mul(x, 0.5), one_plus_erf), one_plus_erf


def gelu_backward_float32(grad: Any, x: Any, one_plus_erf: Any) -> Any:
    """Return ``grad * gelu'(x)`` (PyTorch's formula) from the forward's ``1 + erf(x / sqrt(2))`` (float32).

    ``exp`` runs in float64 and is rounded to float32: MindSpore's float32 Exp CPU kernel is off by up to ~40 units
    in the last place for arguments in [-1, 0] (hundreds further out), PyTorch's (Sleef) by at most one.
    """
    import mindspore
    from mindspore import ops

    argument = ops.cast(ops.mul(ops.mul(x, x), -0.5), mindspore.float64)
    pdf = ops.mul(ops.cast(ops.exp(argument), mindspore.float32), _BETA)
    return ops.mul(grad, ops.add(ops.mul(one_plus_erf, 0.5), ops.mul(x, pdf)))


@functools.lru_cache(maxsize=1)
def host_gelu() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """``_host_gelu``'s ``gelu_forward(x, y, one_plus_erf, nan_at_infinity)`` and ``gelu_backward(grad, x,
    one_plus_erf, out)`` (float32 NumPy arrays of one length) where the extension is built and computes on this
    CPU (AVX2: asked once, with one element), else None: the kernels :func:`erf_gelu_wrapper`'s host path runs."""
    import numpy as np

    try:
        from mindspeed_ms.compat._host_gelu import gelu_backward, gelu_forward  # type: ignore[import-not-found]
    except ImportError:
        return None
    one = np.ones(1, np.float32)
    if gelu_forward(one, np.empty(1, np.float32), np.empty(1, np.float32), True) is NotImplemented:
        return None
    return gelu_forward, gelu_backward


#: the wrappers :func:`erf_gelu_wrapper` made (:func:`is_erf_gelu`)
_WRAPPERS: list[Any] = []


def is_erf_gelu(function: Any) -> bool:
    """Whether ``function`` is a wrapper :func:`erf_gelu_wrapper` made (``F.gelu`` as our patch installed it)."""
    for made in _WRAPPERS:
        if made is function:
            return True
    return False


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable)."""
    import math

    import mindspore
    import numpy as np
    from mindspore import Tensor

    from mindspeed_ms.compat.host_memory import host_array
    from mindspeed_ms.compat.host_outputs import new_float32

    try:
        from mindspeed_ms.compat._host_gelu import gelu_backward as host_backward  # type: ignore[import-not-found]
        from mindspeed_ms.compat._host_gelu import gelu_forward as host_forward
    except ImportError:  # not built: MindSpore's kernels
        host_forward = host_backward = None
    float32, float16, empty, from_numpy = mindspore.float32, mindspore.float16, np.empty, Tensor.from_numpy
    host = host_forward is not None

    class Gelu(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """gelu with PyTorch's backward formula (ten kernels instead of autograd through the forward)."""

        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            dtype = x.dtype
            wide = x if dtype is float32 else x.astype(float32)
            nan_at_infinity = dtype is not float16
            ctx.dtype = dtype
            ctx.arrays = None
            elements = math.prod(wide._shape)
            if host and elements >= HOST_ELEMENTS and contiguity_read()(wide):
                values = host_array(wide) if elements >= COPY_ELEMENTS else host_array(wide).copy()
                result, y = new_float32(values.shape)
                one_plus_erf = empty(values.shape, values.dtype)  # NumPy's: read by the backward only
                if host_forward(values, y, one_plus_erf, nan_at_infinity) is not NotImplemented:
                    ctx.save_for_backward(wide)
                    ctx.arrays = (values, one_plus_erf)
                    return result if dtype is float32 else result.astype(dtype)
            y, one_plus_erf = gelu_float32(wide, nan_at_infinity=nan_at_infinity)
            ctx.save_for_backward(wide, one_plus_erf)
            return y if dtype is float32 else y.astype(dtype)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            dtype = ctx.dtype
            if grad.dtype is not float32:
                grad = grad.astype(float32)
            arrays = ctx.arrays
            if arrays is not None:
                values, one_plus_erf = arrays
                gradient = host_array(grad) if contiguity_read()(grad) else None
                if gradient is not None and gradient.shape == values.shape:
                    tensor, result = new_float32(values.shape)
                    if host_backward(gradient, values, one_plus_erf, result) is not NotImplemented:
                        return tensor if dtype is float32 else tensor.astype(dtype)
                wide = ctx.saved_tensors[0]
                result = gelu_backward_float32(grad, wide, from_numpy(one_plus_erf))
            else:
                wide, one_plus_erf = ctx.saved_tensors
                result = gelu_backward_float32(grad, wide, one_plus_erf)
            return result if dtype is float32 else result.astype(dtype)

    return Gelu


@functools.lru_cache(maxsize=1)
def _computed_here() -> tuple[Any, ...]:
    import mindspore

    return (mindspore.float32, mindspore.float16, mindspore.bfloat16)


def erf_gelu_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap MSAdapter's ``F.gelu``: the erf form of float32/float16/bfloat16 tensors runs :func:`gelu_float32`
    with :func:`gelu_backward_float32` as its gradient.

    Args:
        op: ``msadapter.nn.functional.gelu`` (``gelu(input, *, approximate='none')``).

    Returns:
        ``op``'s signature.
    """

    @functools.wraps(op)
    def gelu(input: Any, *args: Any, **kwargs: Any) -> Any:
        approximate = kwargs.get("approximate", args[0] if args else "none")
        if (approximate != "none" or len(args) > 1 or set(kwargs) - {"approximate"}
                or getattr(input, "dtype", None) not in _computed_here() or not getattr(input, "_shape", None)):
            return op(input, *args, **kwargs)
        return _function().apply(input)

    _WRAPPERS.append(gelu)
    return gelu
