"""bfloat16 on MindSpore's CPU backend: computed in float32 and rounded back, as PyTorch's CPU kernels do.

MindSpore 2.7.1 has almost no bfloat16 CPU kernels (MatMul, Softmax, Zeros, ... fail with "Select CPU
operator[...] fail! Unsupported data type!"; Cast, Concat, Transpose, Reshape work). PyTorch's CPU kernels
for matmul, softmax and layer_norm accumulate bfloat16 inputs in float32 and round the result once, so
computing in float32 and casting back gives PyTorch's values (within a bfloat16 rounding). Inputs of other
dtypes go to the original untouched.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.engine import passthrough

__all__ = ["via_float32_wrapper", "zeros_wrapper", "inplace_via_float32_wrapper", "grad_in_float32_wrapper",
           "view_in_float32_wrapper", "any_via_float32_wrapper", "setitem_wrapper"]


def _widen(value: Any, bfloat16: Any, float32: Any) -> Any:
    from mindspore import ops

    if getattr(value, "dtype", None) == bfloat16 and hasattr(value, "shape"):
        return ops.cast(value, float32)
    return value


def via_float32_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``op`` in float32 when its first argument is a bfloat16 tensor; float32 results come back as bfloat16.

    A call with ``dtype=`` goes to ``op`` as it is (the caller chose the result dtype).
    """
    import mindspore
    from mindspore import ops

    bfloat16, float32 = mindspore.bfloat16, mindspore.float32

    @functools.wraps(op)
    def widened(input: Any, *args: Any, **kwargs: Any) -> Any:
        # MindSpore's dtypes are singletons: an identity test (~1 us) instead of == (~6 us) on every call, on
        # MindSpore's own dtype attribute (what the ``dtype`` property returns, without its Python frame)
        if getattr(input, "_dtype", None) is not bfloat16 or kwargs.get("dtype") is not None:
            return op(input, *args, **kwargs)
        result = op(ops.cast(input, float32), *(_widen(a, bfloat16, float32) for a in args),
                    **{k: _widen(v, bfloat16, float32) for k, v in kwargs.items()})
        if isinstance(result, tuple):
            return type(result)(ops.cast(r, bfloat16) if getattr(r, "dtype", None) == float32 else r for r in result)
        return ops.cast(result, bfloat16) if getattr(result, "dtype", None) == float32 else result  # equal: a bool

    # a tensor of another dtype (every call but a bfloat16 one) goes straight to ``op``, without the Python frame
    # above where mindspeed_ms.engine's C wrappers are built
    return passthrough.fork(op, widened, "_dtype", slow_when=bfloat16)


def zeros_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.zeros(..., dtype=torch.bfloat16)``: float32 zeros cast to bfloat16 (Zeros has no bfloat16 CPU
    kernel); ``requires_grad`` is set on the bfloat16 leaf."""
    import mindspore
    from mindspore import ops

    @functools.wraps(op)
    def zeros(*size: Any, **kwargs: Any) -> Any:
        if kwargs.get("dtype") != mindspore.bfloat16:
            return op(*size, **kwargs)
        requires_grad = kwargs.pop("requires_grad", False)
        result = ops.cast(op(*size, **dict(kwargs, dtype=mindspore.float32)), mindspore.bfloat16)
        if requires_grad:
            result.requires_grad_(True)
        return result

    return zeros


def inplace_via_float32_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """An in-place method (``mul_``, ``div_``, ``fill_``, ``zero_``) on a bfloat16 tensor: applied to a float32
    copy, written back with ``copy_`` (which writes through views and rounds to bfloat16, as PyTorch's
    bfloat16 kernels round their float32 result)."""
    import mindspore
    from mindspore import ops

    from mindspeed_ms.compat.inplace import call_site
    from mindspeed_ms.compat.slice_copies import refuse_write

    bfloat16, float32 = mindspore.bfloat16, mindspore.float32
    name = getattr(op, "__name__", "an in-place op")

    @functools.wraps(op)
    def widened(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "dtype", None) is not bfloat16:
            return op(self, *args, **kwargs)
        refuse_write(name, self, call_site)  # first: a copy where PyTorch's piece is a view, named as called
        wide = ops.cast(self, float32)
        op(wide, *(_widen(a, bfloat16, float32) for a in args), **{k: _widen(v, bfloat16, float32)
                                                                  for k, v in kwargs.items()})
        self.copy_(wide)
        return self

    return widened



def grad_in_float32_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """An op whose forward has a bfloat16 CPU kernel and whose backward has none, on a bfloat16 tensor that autograd
    records (it requires grad, grad mode on): run on a float32 copy, each float32 result cast back to bfloat16.

    ``repeat_interleave``: its backward (ReduceSum) has no bfloat16 CPU kernel; the values and gradients are exact in
    either dtype. A tensor that autograd does not record goes to ``op`` as it is. For ops whose results are views in
    PyTorch see :func:`view_in_float32_wrapper`.
    """
    return _in_float32(op, None)


def view_in_float32_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """:func:`grad_in_float32_wrapper` for an op that returns views of its input in PyTorch (``x[index]`` with a basic
    index, ``split``, ``chunk``, ``narrow``, ``unbind``, ``expand``): the results are copies here, marked
    (:mod:`.slice_copies`) so that an in-place write into one, or into the input while one is alive, raises instead
    of being lost.

    The forward StridedSlice has a bfloat16 CPU kernel, its backward StridedSliceGrad has none, so megatron's
    query/key/value split of a ``--bf16`` model (and MindSpeed-LLM's rotary ``t[..., :rot_dim]``) failed at
    ``backward()``. Selecting elements is exact in either dtype: the values and the gradients (cast to float32,
    scattered, cast back) are PyTorch's. A tensor that autograd does not record (``torch.no_grad()``, or it does not
    require grad) goes to ``op`` as it is: its pieces are views of its memory, as megatron's bfloat16 parameter
    buffers need.
    """
    from mindspeed_ms.compat.slice_copies import basic_index, mark

    name = getattr(op, "__name__", "a view op")
    name = f"Tensor.{name}" if name.startswith("__") else f"{name.rstrip('_')}()"  # MSAdapter's split_ is split

    indexing = name == "Tensor.__getitem__"

    def copies(args: tuple[Any, ...]) -> bool:
        """An advanced index (a tensor, list or bool): a copy in PyTorch, taken in float32 with or without grad (the
        bfloat16 gather kernels are missing as well)."""
        return indexing and bool(args) and not basic_index(args[0])

    def marked(self: Any, args: tuple[Any, ...], result: Any) -> None:
        if not copies(args):
            mark(name, self, result)

    return _in_float32(op, marked, copies)


def _in_float32(op: Callable[..., Any], marked: Callable[[Any, tuple[Any, ...], Any], None] | None,
                always: Callable[[tuple[Any, ...]], bool] | None = None) -> Callable[..., Any]:
    import mindspore
    from mindspore import ops

    from mindspeed_ms.compat.inplace_checks import records_grad

    bfloat16, float32 = mindspore.bfloat16, mindspore.float32

    def narrow(result: Any) -> Any:
        return ops.cast(result, bfloat16) if getattr(result, "_dtype", None) is float32 else result

    @functools.wraps(op)
    def widened(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "_dtype", None) is not bfloat16:
            return op(self, *args, **kwargs)
        if not records_grad(self):
            if always is None or not always(args):
                return op(self, *args, **kwargs)
            return narrow(op(ops.cast(self, float32), *args, **kwargs))
        result = op(ops.cast(self, float32), *args, **kwargs)
        if isinstance(result, (tuple, list)):
            result = type(result)(narrow(piece) for piece in result)
        else:
            result = narrow(result)
        if marked is not None:
            marked(self, args, result)
        return result

    return passthrough.fork(op, widened, "_dtype", slow_when=bfloat16)


def any_via_float32_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``op`` with a bfloat16 tensor anywhere among its arguments (``torch.where(condition, x, y)``,
    ``torch.stack([...])``): every bfloat16 tensor (in a list or tuple argument too) widened to float32, the float32
    results cast back to bfloat16. Where a floating tensor of another dtype is among the arguments the results stay
    as ``op`` gives them (PyTorch promotes ``bfloat16`` with ``float32`` to ``float32``). Selecting, stacking and
    filling are exact in either dtype."""
    import mindspore
    from mindspore import ops

    bfloat16, float32 = mindspore.bfloat16, mindspore.float32
    floating = (mindspore.float16, mindspore.float32, mindspore.float64)

    def scan(value: Any, found: list[bool]) -> Any:
        if isinstance(value, (list, tuple)) and not hasattr(value, "shape"):
            return type(value)(scan(item, found) for item in value)
        dtype = getattr(value, "_dtype", None)
        if dtype is bfloat16:
            found[0] = True
            return ops.cast(value, float32)
        if dtype in floating:
            found[1] = True
        return value

    def narrow(result: Any) -> Any:
        if isinstance(result, (list, tuple)):
            return type(result)(narrow(item) for item in result)
        return ops.cast(result, bfloat16) if getattr(result, "_dtype", None) is float32 else result

    @functools.wraps(op)
    def widened(*args: Any, **kwargs: Any) -> Any:
        found = [False, False]  # a bfloat16 tensor, a floating tensor of another dtype
        wide_args = scan(args, found)
        if not found[0] or kwargs.get("dtype") is not None:
            return op(*args, **kwargs)
        result = op(*wide_args, **{key: scan(value, found) for key, value in kwargs.items()})
        return result if found[1] else narrow(result)

    return widened


def setitem_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """``t[index] = value`` on a bfloat16 tensor that autograd records (it or the value requires grad): MindSpore's
    assignment kernels (TensorScatterUpdate, ScatterNd) have no bfloat16 CPU kernel. The assignment runs on a float32
    copy (exact: it selects and writes values), which is cast back and copied into the tensor (``copy_``, recorded
    by autograd: the gradient flows to the kept elements and to the value). Other assignments go to ``op``.

    Raises:
        InPlaceOnViewError: the tensor is a view (the copy would not reach its base, as PyTorch's write does).
    """
    import mindspore
    from mindspore import ops

    from mindspeed_ms.compat.inplace import refuse_recorded_view_write
    from mindspeed_ms.compat.inplace_checks import records_grad

    bfloat16, float32 = mindspore.bfloat16, mindspore.float32

    @functools.wraps(op)
    def setitem(self: Any, index: Any, value: Any) -> Any:
        if getattr(self, "_dtype", None) is not bfloat16 or not (records_grad(self) or records_grad(value)):
            return op(self, index, value)
        refuse_recorded_view_write("__setitem__", self, "a bfloat16 view whose write autograd records cannot be "
                                   "assigned on this backend (no bfloat16 kernel; a float32 copy cannot reach the "
                                   "view's base)")
        wide = ops.cast(self, float32)
        op(wide, index, _widen(value, bfloat16, float32))
        self.copy_(ops.cast(wide, bfloat16))
        return None

    return setitem
