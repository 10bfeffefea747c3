"""``torch.nn.functional.layer_norm`` of large float32 tensors computed on the host (MindSpore's CPU backend).

MindSpore's CPU ``LayerNormGrad`` kernel takes ~7 ms for megatron's ``[128, 4, 512]`` activations at the mid size
(hidden 512, sequence 128, micro batch 4), five calls a step, and the forward ~2-10 ms, where PyTorch spends
~0.3 ms on both. Here the arithmetic (:func:`.host_arithmetic.layer_norm_forward` / ``layer_norm_backward``) runs
over the tensors' host memory (:func:`~mindspeed_ms.compat.host_memory.host_array`) straight into the result
tensors' memory: one pass per row in the optional C extension ``_host_rows`` (the rows split between two threads;
~0.25 ms forward and ~0.5 ms backward at that shape on one loaded core, where NumPy's passes took ~0.8 and ~1.7 ms),
else NumPy's passes with the same arithmetic.

The arithmetic is PyTorch's CPU kernel's (``aten/src/ATen/native/cpu/layer_norm_kernel.cpp``) but for its sums:

- forward: per row the mean and the (population) variance, ``rstd = 1 / sqrt(var + eps)`` in float32, then
  ``y = (x * rstd + (-rstd * mean)) * weight + bias``;
- backward: ``ds = sum(dy * weight * x)``, ``db = sum(dy * weight)`` per row, ``b = (db * mean - ds) * rstd^3 / n``,
  ``c = -b * mean - db * rstd / n``, ``dx = rstd * dy * weight + b * x + c``; ``dweight = sum over rows of
  dy * (rstd * x - rstd * mean)``, ``dbias = sum over rows of dy``.

PyTorch accumulates the sums in float32 (Welford's algorithm in 16 lanes for the moments, with fused multiply-adds);
here every sum accumulates in float64 and is rounded once to float32: the mean and variance are the float32 nearest
the exact ones (PyTorch's are within a few units of them), the weight and bias gradients at least as close to the
exact sums as PyTorch's. tests/test_compat_host_layer_norm.py measures both paths against the reference interpreter.
A variance beyond float32's range is ``inf`` as in PyTorch (``rstd`` 0).

The Function's bodies run in one C call each where ``_host_bodies`` is built (its ``LayerNorm``: the calls of
:func:`python_forward` and :func:`python_backward` in the same order, with this module's functions), else in Python;
tests/test_compat_host_layer_norm.py runs both.

The backward reads the forward's input from the input's own memory when the input owns it (the forward keeps the
tensor alive; PyTorch saves the same tensor), and from a copy when it is a view of another tensor's memory (other
writes may reach that memory before the backward runs), with the per-row mean and rstd.

Taken: float32 input of at least :data:`MIN_ELEMENTS` elements, ``weight``/``bias`` None or float32 tensors of
``normalized_shape``, a number ``eps`` (every non-empty size: :data:`MIN_ELEMENTS` is 1, the tiny model's too).
Everything else (float16/bfloat16/float64, empty tensors) goes to the wrapped function.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat import host_extensions
from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_arithmetic import layer_norm_backward, layer_norm_forward
from mindspeed_ms.compat.host_memory import host_array
from mindspeed_ms.compat.host_outputs import new_float32

__all__ = ["MIN_ELEMENTS", "bodies", "has_compiled_bodies", "has_compiled_wrapper", "kept_rows", "layer_norm_backward",
           "layer_norm_forward", "layer_norm_wrapper", "python_backward", "python_forward", "python_layer_norm_wrapper"]

#: the C bodies' extension (``_host_bodies``, of its ABI), or None where not built
_compiled = host_extensions.bodies_module()

#: from this many elements the host path: every size since round 20 (at the tiny example's 8,192 elements a step
#: after/before 0.907 in a paired A/B, where 65,536 kept MindSpore's LayerNorm and its gradient's kernels there)
MIN_ELEMENTS = 1


def _rows(tensor: Any, n: int) -> Any:
    """The tensor's values as C-contiguous rows of ``n`` (a copy where its memory is not)."""
    import numpy as np

    return np.ascontiguousarray(host_array(tensor)).reshape(-1, n)


def _copy_rows(values: Any) -> Any:
    """A C-ordered copy of the array ``values``."""
    import numpy as np

    return np.array(values, order="C")


def kept_rows(tensor: Any, n: int) -> Any:
    """The input's rows as the backward will read them: its own memory when it owns it (kept alive with it), else a
    copy (a view's memory is its base's: other writes may reach it before the backward runs)."""
    values = host_array(tensor)
    offset = getattr(tensor, "storage_offset", None)
    if values.flags.c_contiguous and getattr(tensor, "_base", None) is None and offset is not None and offset() == 0:
        return values.reshape(-1, n)
    return _copy_rows(values).reshape(-1, n)


def python_forward(ctx: Any, input: Any, weight: Any, bias: Any, n: int, eps: float) -> Any:
    """:class:`HostLayerNorm`'s forward: layer_norm over the last ``n`` elements into a new float32 tensor; the rows,
    moments and shapes kept in ``ctx.saved``, the tensors whose memory they read in ``ctx.kept``."""
    x = kept_rows(input, n)
    w = None if weight is None else host_array(weight, sync=False).reshape(n)
    b = None if bias is None else host_array(bias, sync=False).reshape(n)
    result, out = new_float32(tuple(input._shape))  # MindSpore's memory: autograd may free it
    _, mean, rstd = layer_norm_forward(x, w, b, eps, out.reshape(x.shape))
    ctx.saved = (x, mean, rstd, w, weight is not None, bias is not None, tuple(input._shape),
                 None if weight is None and bias is None else tuple((weight if bias is None else bias)._shape))
    ctx.kept = (input, weight)  # the memory x and w read
    return result


def python_backward(ctx: Any, grad: Any) -> Any:
    """:class:`HostLayerNorm`'s backward: the gradients of input, weight and bias (None without that parameter)."""
    x, mean, rstd, w, has_weight, has_bias, shape, parameter_shape = ctx.saved
    result, out = new_float32(shape)
    weight_grad, weight_out = new_float32(parameter_shape) if has_weight else (None, None)
    bias_grad, bias_out = new_float32(parameter_shape) if has_bias else (None, None)
    layer_norm_backward(_rows(grad, x.shape[1]), x, mean, rstd, w, has_weight, has_bias, out.reshape(x.shape),
                        None if weight_out is None else weight_out.reshape(-1),
                        None if bias_out is None else bias_out.reshape(-1))
    del ctx.saved, ctx.kept
    return result, weight_grad, bias_grad, None, None


def bodies(compiled: bool = True) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """:class:`HostLayerNorm`'s forward and backward: the C ones (``_host_bodies.LayerNorm`` over this module's
    functions: the same calls in the same order) where built and ``compiled``, else :func:`python_forward` and
    :func:`python_backward`."""
    if compiled and _compiled is not None:
        import numpy as np

        made = _compiled.LayerNorm(host_array, new_float32, layer_norm_forward, layer_norm_backward, _copy_rows,
                                   np.ascontiguousarray)
        return made.forward, made.backward
    return python_forward, python_backward


def has_compiled_bodies() -> bool:
    """Whether :class:`HostLayerNorm` runs the C bodies (``_host_bodies`` built, of its ABI)."""
    return _compiled is not None


@functools.lru_cache(maxsize=2)
def _function(compiled: bool = True) -> Any:
    """The autograd Function (built on first use: MSAdapter's ``torch`` must be importable) with :func:`bodies`."""
    forward, backward = bodies(compiled)

    class HostLayerNorm(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """layer_norm over the last ``n`` elements, forward and backward on the host."""

    HostLayerNorm.forward, HostLayerNorm.backward = staticmethod(forward), staticmethod(backward)
    return HostLayerNorm


@functools.lru_cache(maxsize=1)
def _float32() -> Any:
    import mindspore

    return mindspore.float32


def _size(input: Any, normalized_shape: Any, weight: Any, bias: Any, eps: Any) -> int | None:
    """The number of normalized elements per row when the call is taken here, else None (``_host_wrappers.LayerNorm``
    makes the same tests in the same order)."""
    shape = getattr(input, "_shape", None)
    if shape is None or getattr(input, "_dtype", None) is not _float32() or math.prod(shape) < MIN_ELEMENTS:
        return None
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        return None
    if isinstance(normalized_shape, int):
        normalized = (normalized_shape,)
    else:
        try:
            normalized = tuple(normalized_shape)
        except TypeError:  # not iterable: the wrapped function's error
            return None
    if not normalized or len(normalized) > len(shape) or not all(isinstance(d, int) for d in normalized):
        return None
    if tuple(shape[len(shape) - len(normalized):]) != normalized:
        return None
    for parameter in (weight, bias):
        if parameter is not None and (getattr(parameter, "_shape", None) is None
                                      or getattr(parameter, "_dtype", None) is not _float32()
                                      or tuple(parameter._shape) != normalized):
            return None
    return math.prod(normalized)


def layer_norm_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)``: the calls :func:`_size` takes
    through the Function, every other call to ``op``; the tests in one C call where ``_host_wrappers`` is built
    (:func:`has_compiled_wrapper`), else :func:`python_layer_norm_wrapper`'s."""
    compiled = host_extensions.wrappers_module()
    if compiled is None:
        return python_layer_norm_wrapper(op)
    return functools.update_wrapper(compiled.LayerNorm(op, _function, _float32(), MIN_ELEMENTS), op)


def has_compiled_wrapper() -> bool:
    """Whether :func:`layer_norm_wrapper` makes the C wrapper (``_host_wrappers`` built, of its ABI)."""
    return host_extensions.wrappers_module() is not None


def python_layer_norm_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """:func:`layer_norm_wrapper`'s wrapper in Python."""

    @functools.wraps(op)
    def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: Any = 1e-5,
                   *args: Any, **kwargs: Any) -> Any:
        n = None if args or kwargs else _size(input, normalized_shape, weight, bias, eps)
        if n is None:
            return op(input, normalized_shape, weight, bias, eps, *args, **kwargs)
        return _function().apply(input, weight, bias, n, float(eps))

    return layer_norm
