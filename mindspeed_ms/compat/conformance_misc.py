"""PyTorch's refusals and numerics for a few MSAdapter ops (tests/conformance: ops_shape, ops_errors, ops_unary,
ops_distributed_local).

- ``Tensor.view`` of a non-contiguous tensor whose strides cannot express the new shape returns a reshaped copy
  (PyTorch: RuntimeError); a write through it would be lost silently. Checked only when the tensor is not
  contiguous, so megatron's many views of contiguous tensors pay one ``is_contiguous()`` call.
- ``torch.bmm`` of a 2-d tensor runs as a matmul and ``Tensor.t`` of a 3-d tensor transposes; PyTorch refuses both.
- ``torch.distributed.destroy_process_group()`` before ``init_process_group`` returns normally (PyTorch: an
  AssertionError).
- MindSpore's float32 CPU Tanh kernel is off by up to 1e-4 for 3 < |x| < 7 (1.00001 at x=5): computed in float64
  and rounded back (three kernels, exact to float32 rounding).
"""

from __future__ import annotations

import contextvars
import functools
import operator
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.errors import ProcessGroupNotInitializedError, TorchRefusalError
from mindspeed_ms.engine import passthrough


def _new_shape(shape: tuple[Any, ...], numel: int) -> list[int] | None:
    """The ints of ``view(*shape)`` with -1 resolved, or None where they are not plain ints (left to the op)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    sizes = [int(size) for size in shape if isinstance(size, int)]
    if len(sizes) != len(shape):
        return None
    if sizes.count(-1) == 1:
        known = 1
        for size in sizes:
            known *= size if size != -1 else 1
        if known == 0:
            return None
        sizes[sizes.index(-1)] = numel // known
    return sizes


def view_is_possible(old_shape: tuple[int, ...], old_stride: tuple[int, ...], new_shape: list[int]) -> bool:
    """Whether ``new_shape`` can view a tensor of ``old_shape``/``old_stride`` (PyTorch's computeStride rule)."""
    numel = 1
    for size in old_shape:
        numel *= size
    if numel == 0 or not old_shape:
        return True
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1
                             and old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = view_numel = 1
    return view_d == -1


_VIEW_MESSAGE = ("view size is not compatible with input tensor's size and stride (at least one dimension spans across "
                 "two contiguous subspaces). Use .reshape(...) instead.")


#: set while MSAdapter's own code runs that views the transposes it makes itself (einsum's sumproduct_pair): there
#: the reshaped copy MSAdapter's view returns is what that code means (no caller holds the view to write through it)
_INTERNAL_VIEWS: contextvars.ContextVar[bool] = contextvars.ContextVar("mindspeed_ms_internal_views", default=False)


def internal_views_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``op`` (MSAdapter code that views its own transposes, e.g. ``torch.einsum``) without the refusal of
    :func:`view_wrapper`: ``torch.einsum("sec,ecm->sm", ...)`` (MindSpeed's MoE combine) raised it."""

    @functools.wraps(op)
    def internal(*args: Any, **kwargs: Any) -> Any:
        token = _INTERNAL_VIEWS.set(True)
        try:
            return op(*args, **kwargs)
        finally:
            _INTERNAL_VIEWS.reset(token)

    return internal


def view_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.view`` refusing, as PyTorch does, a shape the strides of a non-contiguous tensor cannot express."""

    @functools.wraps(op)
    def view(self: Any, *shape: Any) -> Any:
        if shape and not self.is_contiguous() and not _INTERNAL_VIEWS.get():
            sizes = _new_shape(shape, self.numel())
            if sizes is not None and not view_is_possible(tuple(self.shape), tuple(self.stride()), sizes):
                raise TorchRefusalError("Tensor.view", _VIEW_MESSAGE)
        return op(self, *shape)

    # a contiguous tensor (~40 views a training step) goes straight to ``op``, without the Python frame above where
    # mindspeed_ms.engine's C wrappers are built
    return passthrough.fork(op, view, test=_IS_CONTIGUOUS)


_IS_CONTIGUOUS = operator.methodcaller("is_contiguous")


def bmm_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``bmm`` refusing operands that are not 3-d (MindSpore multiplies them as matrices)."""

    @functools.wraps(op)
    def bmm(input: Any, mat2: Any, *args: Any, **kwargs: Any) -> Any:
        if input.ndim != 3:
            raise TorchRefusalError("torch.bmm", "batch1 must be a 3D tensor")
        if getattr(mat2, "ndim", 3) != 3:
            raise TorchRefusalError("torch.bmm", "batch2 must be a 3D tensor")
        return op(input, mat2, *args, **kwargs)

    return bmm


def t_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``t`` refusing a tensor of more than 2 dimensions (MindSpore transposes its first two, or asserts)."""

    @functools.wraps(op)
    def t(input: Any) -> Any:
        if input.ndim > 2:
            raise TorchRefusalError("torch.t", f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
        return op(input)

    return t


def destroy_process_group_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``destroy_process_group()`` refusing, as PyTorch does, when no default process group exists."""

    @functools.wraps(op)
    def destroy_process_group(group: Any = None) -> Any:
        if group is None:
            from msadapter import distributed

            if not distributed.is_initialized():
                raise ProcessGroupNotInitializedError("Process group cannot be None")
        return op(group)

    return destroy_process_group


def tanh_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``tanh`` of a float32 (or integer, bool) tensor computed in float64 (the float32 CPU kernel is off by up to
    1e-4)."""
    import mindspore

    float32, float64 = mindspore.float32, mindspore.float64

    @functools.wraps(op)
    def tanh(input: Any, *args: Any, **kwargs: Any) -> Any:
        dtype = getattr(input, "dtype", None)
        if dtype is not None and not args and not kwargs and (
                dtype is float32 or not (input.is_floating_point() or input.is_complex())):
            return op(input.to(float64)).to(float32)  # integers and bools: PyTorch's result is float32 too
        return op(input, *args, **kwargs)

    return tanh


def concatenate_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.concatenate`` accepting ``axis=`` (PyTorch's NumPy alias of ``dim``; MSAdapter: TypeError)."""

    @functools.wraps(op)
    def concatenate(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        if "axis" in kwargs:
            if args or "dim" in kwargs:
                raise TypeError("concatenate() got multiple values for argument 'dim'")
            kwargs["dim"] = kwargs.pop("axis")
        return op(tensors, *args, **kwargs)

    return concatenate


def _is_int(value: Any) -> bool:
    """An int (not a bool) or an integral float (nn.Upsample passes ``float(scale_factor)``)."""
    if isinstance(value, float):
        return value.is_integer() and value > 0
    return isinstance(value, int) and not isinstance(value, bool)


def interpolate_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``interpolate`` with an integral ``scale_factor`` (or a sequence of them), as PyTorch accepts: passed as the
    output ``size`` it gives (each spatial size times the factor; MindSpore refuses an int, and a float one with
    'nearest' on 3-d input). Exact: an integral factor makes PyTorch's source-index scale ``size_in / size_out``."""

    @functools.wraps(op)
    def interpolate(input: Any, size: Any = None, scale_factor: Any = None, *args: Any, **kwargs: Any) -> Any:
        factors = scale_factor if isinstance(scale_factor, (tuple, list)) else None
        if size is None and (_is_int(scale_factor) or (factors and all(_is_int(f) for f in factors))):
            spatial = tuple(input.shape[2:])
            factors = factors or (scale_factor,) * len(spatial)
            if len(factors) == len(spatial):
                size = tuple(int(d) * int(f) for d, f in zip(spatial, factors))
                scale_factor = None
        return op(input, size, scale_factor, *args, **kwargs)

    return interpolate


def as_strided_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.as_strided`` / ``Tensor.as_strided``: a view of ``self``'s storage, as in PyTorch (MSAdapter gathers
    a contiguous copy: writes through it, or to ``self``, are not seen by the other), with PyTorch's checks (the
    view op reads past the storage unchecked).

    MindSpore's AsStrided view op has no working backward ("The pointer[base_shape] is null"): where a gradient
    is recorded MSAdapter's differentiable copy stays (reads and gradients are PyTorch's; a write through the
    result does not reach ``self``).
    """

    @functools.wraps(op)
    def as_strided(self: Any, size: Any, stride: Any, storage_offset: Any = None) -> Any:
        import msadapter
        from mindspore.ops.auto_generate.gen_ops_prim import as_strided_op

        size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
        if len(size) != len(stride):
            raise TorchRefusalError("torch.as_strided", "mismatch in length of strides and shape")
        offset = self.storage_offset() if storage_offset is None else int(storage_offset)
        if min(size + stride + (offset,)) < 0:
            raise TorchRefusalError(
                "torch.as_strided", f"as_strided: Negative strides, sizes or offset are not supported, got "
                                    f"size={list(size)}, stride={list(stride)}, storage_offset={offset}")
        items = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
        needed, available = items * self.element_size(), self.untyped_storage().nbytes()
        if needed > available:
            raise TorchRefusalError(
                "torch.as_strided", f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                                    f"{offset}, and itemsize {self.element_size()} requiring a storage size of "
                                    f"{needed} are out of bounds for storage of size {available}")
        if self.requires_grad and msadapter.is_grad_enabled():
            return op(self, size, stride, storage_offset)
        return as_strided_op(self, size, stride, offset)

    return as_strided


def stride_wrapper(stride: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Tensor.stride``: all strides as a tuple, as PyTorch returns them (MindSpore: a list, so
    ``x.stride() == (3, 1)`` was False, silently); ``stride(dim)`` unchanged."""

    @functools.wraps(stride)
    def strides(self: Any, dim: Any = None) -> Any:
        if dim is None:
            return tuple(stride(self))
        return stride(self, dim)

    return strides
