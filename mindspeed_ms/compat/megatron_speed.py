"""megatron-core's optimizer step on MindSpore's CPU backend without the work nobody asked for.

On this backend every kernel launch costs tens to hundreds of microseconds, so the number of launches,
not the arithmetic, sets the step time of a small or mid-size model. Three places of megatron-core
0.12.1 launch kernels per parameter, or compute what is thrown away:

* ``ChainedOptimizer.step`` (the optimizer ``get_megatron_optimizer`` returns) counts the zeros of every
  gradient whatever ``log_num_zeros_in_grad`` says (~8 kernels and casts per gradient: about half the
  step of a small model); ``FP32Optimizer.step`` and ``MixedPrecisionOptimizer.step`` check the flag.
  :func:`chained_optimizer_step` checks it too. With the flag off it returns ``None`` as the third
  value, as ``FP32Optimizer.step`` does (megatron's ``training.py`` then neither logs nor reduces it;
  on PyTorch the ``ChainedOptimizer`` would return the count it computed anyway).
* The gradient norm (``get_main_grads_for_grad_norm`` + megatron's local ``multi_tensor_l2norm``: a norm
  per gradient, then the norm of the norms) and the clipping (``clip_grad_by_total_norm_fp32``: one
  scaled copy per gradient, each written back through a view of DDP's buffer). When the gradients of
  a DDP bucket are exactly its ``grad_data`` (every parameter of the bucket counted, its gradient the
  view ``main_grad`` of the buffer, no padding), the bucket is one tensor for both: one norm, one
  in-place scaling of its host memory.

The norm over a bucket is ``sqrt(sum(g * g))`` over all its elements instead of the norm of the
per-gradient norms: the same value up to float32 rounding (a relative difference of ~1e-7), so
losses stay within the parity tolerances but are not bit-identical to the per-gradient sum.
"""

from __future__ import annotations

import itertools
import math
import operator
from typing import Any

from mindspeed_ms.compat import host_kernels, host_memory
from mindspeed_ms.compat.errors import ClipGradTypeError

__all__ = ["ClipGradTypeError", "chained_optimizer_step", "clip_grad_by_total_norm_fp32",
           "get_main_grads_for_grad_norm", "host_array", "remember_buckets", "scale_in_place"]

#: The attribute through which a parameter names its DDP bucket (set by :func:`remember_buckets`).
BUCKET_ATTRIBUTE = "_mindspeed_ms_bucket"


def host_array(tensor: Any) -> Any:
    """Return a 1-D NumPy array over the host memory of a contiguous CPU ``tensor`` (writes land in the tensor).

    Waits for every queued kernel first, so the memory holds what the tensor holds.
    """
    return host_memory.host_array(tensor, flat=True)


def scale_in_place(tensor: Any, factor: float) -> None:
    """Multiply a contiguous CPU ``tensor`` (a view of a DDP buffer or not) by ``factor`` in its host memory.

    The same float32 product as ``tensor * factor`` on MindSpore (the factor rounded to the tensor's dtype),
    without a kernel, a temporary, or a write-back through the view.
    """
    values = host_array(tensor)
    host_kernels.scale(values, values.dtype.type(factor))


def remember_buckets(bucket_group: Any) -> None:
    """Let each parameter of ``bucket_group``'s buckets name its bucket (once per bucket group)."""
    if getattr(bucket_group, "_mindspeed_ms_buckets_remembered", False):
        return
    for bucket in bucket_group.buckets:
        for param in bucket.params_list:
            setattr(param, BUCKET_ATTRIBUTE, bucket)
    bucket_group._mindspeed_ms_buckets_remembered = True


def _lie_in(dtype: Any, pairs: list[tuple[Any, Any]]) -> bool:
    """Whether each gradient has ``dtype`` and lies where its parameter's ``main_grad`` lies."""
    for param, grad in pairs:
        main_grad = getattr(param, "main_grad", None)
        if main_grad is None or grad.dtype != dtype or grad.data_ptr() != main_grad.data_ptr():
            return False
    return True


def _coalesce(params: list[Any], grads: list[Any]) -> tuple[list[Any], list[Any]]:
    """Split ``grads`` into whole DDP buckets' ``grad_data`` and the gradients left over.

    A bucket replaces its parameters' gradients only when they are exactly its ``grad_data``: every one of
    its parameters is in ``params``, each gradient lies where the parameter's ``main_grad`` view lies, and
    the bucket holds nothing else (no padding).
    """
    members = _members(params)
    whole: list[Any] = []
    taken: list[list[int]] = []
    for bucket, indices in members:
        if len(indices) != len(bucket.params_list):
            continue
        chosen = [params[i] for i in indices]
        # MindSpore's own shape attribute: MSAdapter's numel() builds a torch.Size per parameter
        if sum(map(math.prod, map(_SHAPE, chosen))) != math.prod(_SHAPE(bucket.grad_data)):
            continue
        if not _whole(bucket.grad_data._dtype, chosen, [grads[i] for i in indices]):
            continue
        whole.append(bucket.grad_data)
        taken.append(indices)
    if not taken:
        return whole, list(grads)
    if sum(map(len, taken)) == len(grads):  # every gradient is in a whole bucket (indices are distinct)
        return whole, []
    left = set(range(len(grads))).difference(*taken)
    return whole, [grad for index, grad in enumerate(grads) if index in left]


#: The last grouping :func:`_members` made: (the parameters, the bucket each named, the grouping)
_GROUPING: list[Any] = [None]


def _members(params: list[Any]) -> list[tuple[Any, list[int]]]:
    """Each bucket named by a parameter of ``params``, with the indices of its parameters in ``params``.

    Kept while the same parameters name the same buckets (grad norm and clipping ask for the same list every
    step), checked with C-level reads (no Python call per parameter).
    """
    owners = list(map(getattr, params, itertools.repeat(BUCKET_ATTRIBUTE), itertools.repeat(None)))
    known = _GROUPING[0]
    if (known is not None and len(known[0]) == len(params) and all(map(operator.is_, known[0], params))
            and all(map(operator.is_, known[1], owners))):
        return known[2]  # type: ignore[no-any-return]
    grouped: dict[int, tuple[Any, list[int]]] = {}
    for index, bucket in enumerate(owners):
        if bucket is not None:
            grouped.setdefault(id(bucket), (bucket, []))[1].append(index)
    members = list(grouped.values())
    _GROUPING[0] = (list(params), owners, members)
    return members


#: MindSpore's own attributes behind ``shape`` and ``dtype`` (no Python property frame; read per parameter)
_SHAPE, _DTYPE = operator.attrgetter("_shape"), operator.attrgetter("_dtype")


def _whole(dtype: Any, params: list[Any], grads: list[Any]) -> bool:
    """:func:`_lie_in` for one bucket, answered with MindSpore's own attribute reads where it holds."""
    main_grads = list(map(getattr, params, itertools.repeat("main_grad"), itertools.repeat(None)))
    if all(map(operator.is_not, main_grads, itertools.repeat(None))) and all(
            map(operator.is_, map(_DTYPE, grads), itertools.repeat(dtype))):
        address = host_memory.tensor_reads()[0]
        return list(map(address, grads)) == list(map(address, main_grads))
    return _lie_in(dtype, list(zip(params, grads)))  # a missing main_grad, or a dtype to compare with ==


#: a leaf's gradient, read without the ``grad`` property's frame (every parameter an optimizer holds is a leaf)
_IS_LEAF, _GRAD = operator.attrgetter("_is_leaf"), operator.attrgetter("_grad")


def _leaf_grads(params: list[Any]) -> list[Any] | None:
    """Every parameter's ``_grad`` when all are leaves with a gradient (C-level reads), else None."""
    try:
        if not all(map(_IS_LEAF, params)):
            return None
        grads = list(map(_GRAD, params))
    except AttributeError:  # not MindSpore's tensors: the loop reads them one by one
        return None
    return None if any(map(operator.is_, grads, itertools.repeat(None))) else grads


def _grads_for_norm(optimizer: Any) -> tuple[list[Any], list[Any]]:
    import megatron.core.tensor_parallel as tensor_parallel  # a package's name by attribute: no importlib Python
    from megatron.core.transformer.module import param_is_not_shared

    param_is_not_tensor_parallel_duplicate = tensor_parallel.param_is_not_tensor_parallel_duplicate

    decoupled = optimizer.config.use_precision_aware_optimizer
    all_params = optimizer.get_parameters()
    grads_all = None if decoupled else _leaf_grads(all_params)
    # the common case, with no Python loop of ours: every parameter a leaf with a gradient, none shared, none a
    # tensor-parallel duplicate (megatron's two tests called for each parameter, as the loop below calls them)
    if grads_all is not None and all(list(map(param_is_not_shared, all_params))) and all(
            list(map(param_is_not_tensor_parallel_duplicate, all_params))):
        return list(all_params), grads_all
    params, grads = [], []
    for param in all_params:
        # ``param.grad`` of a leaf (every parameter an optimizer holds) is MindSpore's ``_grad`` attribute: read
        # without the property's Python frame; anything else through the property (it warns as PyTorch does)
        grad = getattr(param, "decoupled_grad", None) if decoupled else (
            param._grad if getattr(param, "_is_leaf", False) else param.grad)
        if grad is not None and param_is_not_shared(param) and param_is_not_tensor_parallel_duplicate(param):
            params.append(param)
            grads.append(grad)
    return params, grads


def get_main_grads_for_grad_norm(self: Any) -> list[Any]:
    """Return the gradients whose norm is the gradient norm, whole DDP buckets as one tensor each.

    Replaces ``MegatronOptimizer.get_main_grads_for_grad_norm``: the same filter (gradient present, the
    parameter neither shared nor a tensor-parallel duplicate); the gradients that exactly tile a DDP
    bucket are handed over as the bucket's ``grad_data`` (their norm is the norm of the bucket), so the
    norm costs a few kernels per bucket instead of per gradient. Only the norm is taken of this list.
    """
    params, grads = _grads_for_norm(self)
    whole, rest = _coalesce(params, grads)
    return whole + rest


def clip_grad_by_total_norm_fp32(parameters: Any, max_norm: float, total_norm: float,
                                 use_decoupled_grad: bool = False) -> None:
    """Scale the gradients of ``parameters`` by ``max_norm / (total_norm + 1e-6)`` when that is below 1.

    Replaces ``megatron.core.optimizer.clip_grads.clip_grad_by_total_norm_fp32``: the same coefficient and
    float32 product; gradients that exactly tile a DDP bucket are scaled in one pass over the bucket's
    host memory, the others as megatron's local ``multi_tensor_scale`` does (``grad.copy_(grad * c)``).

    Raises:
        ClipGradTypeError: a gradient that is not float32.
    """
    import mindspore

    if hasattr(parameters, "dtype"):
        parameters = [parameters]
    float32 = mindspore.float32
    parameters = list(parameters)
    grads_all = None if use_decoupled_grad else _leaf_grads(parameters)
    if grads_all is not None and all(map(operator.is_, map(_DTYPE, grads_all), itertools.repeat(float32))):
        params, grads = parameters, grads_all  # the common case, no Python loop: float32 gradients of leaves
    else:
        params, grads = _clipped(parameters, use_decoupled_grad, float32)
    clip_coeff = max_norm / (total_norm + 1.0e-6)
    if clip_coeff >= 1.0:
        return
    whole, rest = _coalesce(params, grads)  # a detached gradient lies where the gradient lies
    for tensor in whole:
        scale_in_place(tensor, clip_coeff)
    for grad in rest:
        grad = grad.detach()
        grad.copy_(grad * clip_coeff)


def _clipped(parameters: list[Any], use_decoupled_grad: bool, float32: Any) -> tuple[list[Any], list[Any]]:
    """The parameters with a gradient and their gradients, one by one (any gradient not float32 refused)."""
    import mindspore

    params, grads = [], []
    for param in parameters:
        grad = getattr(param, "decoupled_grad", None) if use_decoupled_grad else (
            param._grad if getattr(param, "_is_leaf", False) else param.grad)  # as in _grads_for_norm
        if grad is None:
            continue
        if grad._dtype is not float32 and grad.dtype != float32 and not (
                use_decoupled_grad and grad.dtype == mindspore.bfloat16):
            raise ClipGradTypeError(grad.dtype)
        params.append(param)
        grads.append(grad)
    return params, grads


def chained_optimizer_step(self: Any) -> tuple[bool, Any, Any]:
    """Step every chained optimizer, counting gradient zeros only when ``log_num_zeros_in_grad`` is on.

    Replaces ``ChainedOptimizer.step``: prepare the gradients (return ``(False, None, None)`` on inf/NaN),
    the gradient norm over all chained optimizers, clip each (stub optimizers skipped), count zeros,
    step. The count is taken only when a chained optimizer's config asks for it; otherwise the third
    value is ``None``, as ``FP32Optimizer.step`` returns.

    Returns:
        (update successful, gradient norm, number of zeros in the gradients or ``None``).
    """
    import megatron.core.optimizer.optimizer as megatron_optimizer

    if self.prepare_grads():
        return False, None, None
    grad_norm = self.get_grad_norm()
    for optimizer in self.chained_optimizers:
        if getattr(optimizer, "is_stub_optimizer", False):
            continue
        if optimizer.config.clip_grad > 0.0:
            megatron_optimizer.clip_grad_by_total_norm_fp32(
                optimizer.get_parameters(), max_norm=optimizer.config.clip_grad, total_norm=grad_norm,
                use_decoupled_grad=optimizer.config.use_precision_aware_optimizer)
    wanted = any(optimizer.config.log_num_zeros_in_grad for optimizer in self.chained_optimizers)
    num_zeros_in_grad = self.count_zeros() if wanted else None
    return self.step_with_ready_grads(), grad_norm, num_zeros_in_grad
