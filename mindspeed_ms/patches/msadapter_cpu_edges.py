"""Built-in provider: PyTorch's nan and infinity semantics where MindSpore's CPU kernels drop them.

MindSpore's CPU max/min reductions, comparisons-based ops and sorts skip nan, and its softmax gives numbers for rows
PyTorch makes nan (tests/conformance/cases/ops_special_reduce.py finds each against real PyTorch). The replacements
are in :mod:`mindspeed_ms.compat.special_values`. Registered only when MindSpore computes on the CPU (see
:mod:`mindspeed_ms.device`). Its name sorts after ``msadapter_cpu`` and before ``msadapter_cpu_kernels``: its wraps
stack over the former's (bfloat16 through float32, empty inputs, ieee_special) and under the latter's faster host
paths (host_softmax computes PyTorch's values for infinite rows itself; the small tensors it leaves to MindSpore's
kernel come here).
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

from ._msadapter_cpu_edges_half import register_half_precision

name = "msadapter_cpu_edges"
requires = (MSADAPTER_REQUIREMENT,)

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_TENSOR = "mindspore.common.tensor.Tensor"
_REDUCTION = "msadapter.ops.reduction"
_COMPARISON = "msadapter.ops.comparison"
_POINTWISE = "msadapter.ops.pointwise"

#: wrapper in mindspeed_ms.compat.special_values (a factory called with its argument when one is given) ->
#: (targets, why)
_WRAPS: dict[tuple[str, str | None], tuple[tuple[str, ...], str]] = {
    ("nan_extreme_wrapper", "max"): ((f"{_REDUCTION}.max", f"{_TENSOR}.max"),
                                     "max skips nan on CPU: max(x), max(x, dim) (value and index) and max(a, b) give "
                                     "numbers where PyTorch gives nan (and the first nan's index)"),
    ("nan_extreme_wrapper", "min"): ((f"{_REDUCTION}.min", f"{_TENSOR}.min"),
                                     "min skips nan on CPU: min(x), min(x, dim) and min(a, b) give numbers where "
                                     "PyTorch gives nan (and the first nan's index)"),
    ("nan_arg_wrapper", None): ((f"{_REDUCTION}.argmax", f"{_TENSOR}.argmax", f"{_REDUCTION}.argmin",
                                 f"{_TENSOR}.argmin"),
                                "argmax/argmin skip nan on CPU (PyTorch: the first nan's index)"),
    ("nan_amax_wrapper", None): ((f"{_REDUCTION}.amax", f"{_TENSOR}.amax", f"{_REDUCTION}.amin", f"{_TENSOR}.amin"),
                                 "amax/amin skip nan on CPU (PyTorch: nan)"),
    # maximum/minimum and clamp (torch.*, Tensor.*): msadapter_cpu's ieee_special wraps (nan and signed zeros)
    ("nan_clamp_wrapper", None): (("msadapter.ops.pointwise.clip", f"{_TENSOR}.clip"),
                                  "clip of a nan gives a bound on CPU (PyTorch: nan), and of an integer tensor with a "
                                  "float bound stays integral (PyTorch: float32)"),
    ("nan_clamp__wrapper", None): ((f"{_TENSOR}.clamp_",), "Tensor.clamp_ of a nan writes a bound (PyTorch: nan)"),
    ("softmax_rows_wrapper", None): (("msadapter.nn.functional.softmax", "msadapter.ops.pointwise.softmax",
                                      f"{_TENSOR}.softmax", "msadapter.nn.functional.log_softmax",
                                      f"{_TENSOR}.log_softmax"),
                                     "softmax/log_softmax of a row whose maximum is +-inf (all -inf: a fully masked "
                                     "row) or that holds a nan gives numbers on CPU (PyTorch: nan for the row)"),
    ("logsumexp_wrapper", None): ((f"{_REDUCTION}.logsumexp", f"{_TENSOR}.logsumexp"),
                                  "logsumexp of a row of -inf or with a +inf gives nan on CPU (PyTorch: -inf, +inf)"),
    ("nan_sort_wrapper", "sort"): ((f"{_COMPARISON}.sort", f"{_TENSOR}.sort"),
                                   "sort puts nan among the numbers on CPU (PyTorch: after +inf; first when "
                                   "descending)"),
    ("nan_sort_wrapper", "argsort"): ((f"{_COMPARISON}.argsort", f"{_TENSOR}.argsort"),
                                      "argsort puts nan among the numbers on CPU (PyTorch: after +inf)"),
    ("nan_topk_wrapper", None): ((f"{_COMPARISON}.topk", f"{_TENSOR}.topk"),
                                 "topk skips nan on CPU (PyTorch: nan is the largest value)"),
}

#: wrapper in mindspeed_ms.compat.special_dtypes -> (targets, why)
_DTYPE_WRAPS: dict[tuple[str, str | None], tuple[tuple[str, ...], str]] = {
    ("empty_prod_wrapper", None): ((f"{_REDUCTION}.prod", f"{_TENSOR}.prod"),
                                   "prod over an empty dimension returns uninitialised memory on CPU (PyTorch: 1)"),
    ("truth_wrapper", "any"): ((f"{_REDUCTION}.any", f"{_TENSOR}.any"),
                               "any of a float tensor is float32 and counts -0.0 as true on CPU, any of an empty "
                               "tensor is True (PyTorch: bool, -0.0 is false, False)"),
    ("truth_wrapper", "all"): ((f"{_REDUCTION}.all", f"{_TENSOR}.all"),
                               "all of a float tensor is float32 on CPU (PyTorch: bool)"),
    ("integer_cumprod_wrapper", None): (("msadapter.ops.other.cumprod", f"{_TENSOR}.cumprod"),
                                        "cumprod of an integer tensor keeps its dtype on CPU (PyTorch: int64)"),
    ("float32_cumsum_wrapper", None): (("msadapter.ops.other.cumsum", f"{_TENSOR}.cumsum"),
                                       "float16 cumsum accumulates in float16 on CPU (60000 + 60000 - 60000 is inf; "
                                       "PyTorch accumulates in float32: 60000)"),
    ("exact_int64_sum_wrapper", None): ((f"{_REDUCTION}.sum", f"{_TENSOR}.sum"),
                                        "the int64 sum goes through float64 on CPU (2**53 + 1 + 1 gives 2**53; "
                                        "PyTorch: exact, wrapping past 2**63)"),
    ("integer_clamp_wrapper", None): (("msadapter.ops.pointwise.clamp", f"{_TENSOR}.clamp"),
                                      "clamp of an integer tensor with a float bound stays integral on CPU and "
                                      "truncates the bound (PyTorch: float32)"),
    ("bfloat16_check_wrapper", None): tuple((tuple(
        target for name in ("isfinite", "isinf", "isnan") for target in (f"{_COMPARISON}.{name}", f"{_TENSOR}.{name}")),
        "isfinite/isinf/isnan of bfloat16 have no CPU kernel (PyTorch: bool results)")),  # type: ignore[dict-item]
}


def register(registry: Any, args: Any) -> None:
    """Register the nan/infinity fixes, or nothing when MindSpore does not compute on the CPU.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.device import device_target

    if device_target() != "CPU":
        return
    from mindspeed_ms.compat import special_dtypes, special_values

    for module, wraps in ((special_values, _WRAPS), (special_dtypes, _DTYPE_WRAPS)):
        for (wrapper_name, argument), (targets, purpose) in wraps.items():
            wrapper = getattr(module, wrapper_name)
            if argument is not None:
                wrapper = wrapper(argument)
            for target in targets:
                registry.register(target, wrapper, kind="wrap", requires=_MSADAPTER, purpose=purpose)
    from mindspeed_ms.compat import bfloat16

    for target in (f"{_REDUCTION}.mean", f"{_TENSOR}.mean"):
        registry.register(
            target, bfloat16.via_float32_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="mean of bfloat16 fails on CPU (ReduceMean has no bfloat16 kernel); PyTorch accumulates in "
                    "float32 and rounds once: computed in float32, cast back")
    _register_index_bounds(registry)
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        for target in (f"{_COMPARISON}.{name}", f"{_TENSOR}.{name}", f"{_TENSOR}.__{name}__"):
            registry.register(
                target, special_dtypes.int_overflow_wrapper(f"torch.{name}"), kind="wrap", requires=_MSADAPTER,
                purpose=f"{name} with a Python int past int64 (t < 2**64) raises RuntimeError on CPU (PyTorch: "
                        f"OverflowError): re-raised as OpOverflowRefusedError (both); nothing runs on success")
    _register_refusals(registry)
    _register_grad_edges(registry)
    _register_alpha(registry)
    register_half_precision(registry)
    _register_empty_operands(registry)
    _register_histograms(registry)
    _register_rounding(registry)
    from mindspeed_ms.compat import new_tensors

    registry.register(
        f"{_TENSOR}.new_full", "mindspeed_ms.compat.new_tensors:new_full", requires=_MSADAPTER,
        purpose="Tensor.new_full raises NotImplementedError on CPU ('support Ascend only') and takes no "
                "requires_grad; PyTorch: torch.full of self's dtype")
    for factory in ("zeros", "ones"):
        registry.register(
            f"{_TENSOR}.new_{factory}", new_tensors.zero_dim_wrapper(factory), kind="wrap", requires=_MSADAPTER,
            purpose=f"Tensor.new_{factory}(()) fails (MSAdapter unpacks the empty shape into torch.{factory}() with "
                    f"no size); PyTorch: a 0-d tensor")


def _register_rounding(registry: Any) -> None:
    """Register PyTorch's round with decimals and out, Tensor.round_ (mindspeed_ms.compat.round_decimals) and
    Tensor.view(dtype) (mindspeed_ms.compat.dtype_views)."""
    from mindspeed_ms.compat import round_decimals

    for target in ("msadapter.ops.pointwise.round", f"{_TENSOR}.round"):
        registry.register(
            target, round_decimals.round_decimals_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="round(x, decimals=d) with d != 0 raises an untyped RuntimeError on CPU ('For Round only support "
                    "decimals equal 0') and torch.round takes no out=; PyTorch: nearbyint(x * 10**d) / 10**d in "
                    "float32 (float64 for float64)")
    registry.register(f"{_TENSOR}.round_", "mindspeed_ms.compat.round_decimals:round_", create_dummy=True,
                      requires=_MSADAPTER, purpose="Tensor.round_ does not exist under MSAdapter")
    from mindspeed_ms.compat import dtype_views

    registry.register(
        f"{_TENSOR}.view", dtype_views.dtype_view_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x.view(torch.int32) raises TypeError ('Int' object is not iterable: read as a shape); PyTorch: the "
                "same memory read as int32 (MindSpeed's --reuse-fp32-param adds to fp32 parameters through it)")


def _register_histograms(registry: Any) -> None:
    """Register PyTorch's histc, unique and bincount (mindspeed_ms.compat.histograms, unique_values)."""
    from mindspeed_ms.compat import histograms

    for target in ("msadapter.ops.other.histc", f"{_TENSOR}.histc"):
        registry.register(
            target, histograms.histc_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="histc of an empty tensor returns uninitialised counts on CPU and counts nan (PyTorch: zeros, nan "
                    "skipped); the default range (min=max=0: the data's), float64 and integer inputs are refused "
                    "(MindSpeed's MindSpore-backend alltoall dispatcher counts int64 top-k indices, as torch_npu does)")
    from mindspeed_ms.compat import unique_values

    for target in (f"{_REDUCTION}.unique", f"{_TENSOR}.unique"):
        registry.register(
            target, unique_values.unique_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="torch.unique returns the values in the order they first occur on CPU (PyTorch: sorted, the "
                    "default), with an inverse into that order, silently; return_counts=True raises")
    for target in ("msadapter.ops.other.bincount", f"{_TENSOR}.bincount"):
        registry.register(
            target, histograms.bincount_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="bincount of an empty tensor ignores minlength on CPU ([]; PyTorch: minlength zeros)")


def _register_empty_operands(registry: Any) -> None:
    """Register PyTorch's products and splits with empty operands (mindspeed_ms.compat.empty_operands)."""
    from mindspeed_ms.compat import empty_operands

    for target in ("msadapter.ops.blas.matmul", f"{_TENSOR}.matmul", f"{_TENSOR}.__matmul__", "msadapter.ops.blas.mm",
                   f"{_TENSOR}.mm", "msadapter.ops.blas.bmm", f"{_TENSOR}.bmm"):
        registry.register(
            target, empty_operands.empty_product_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="a product whose inner dimension is 0 returns uninitialised memory on CPU (PyTorch: zeros): "
                    "megatron's SequentialMLP gave an expert that received no token a garbage weight gradient "
                    "(grad_output.t().matmul(input) over zero rows)")
    registry.register(
        "msadapter.nn.functional.linear", empty_operands.empty_linear_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.linear of zero rows: MatMul's bprop gives the weight a gradient of uninitialised memory on CPU "
                "(PyTorch: zeros); of an empty inner dimension: uninitialised values (PyTorch: the bias)")
    for target in ("msadapter.ops.array.split", f"{_TENSOR}.split"):
        registry.register(
            target, empty_operands.empty_sections_split_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="torch.split with a first section of size 0 (megatron's split by tokens_per_expert when the "
                    "first expert received no token) fails in its backward on CPU (StridedSliceGrad: memory out "
                    "of bounds); PyTorch's backward gives the input its gradient")
    for targets, wrapper, why in (
            (("msadapter.ops.array.narrow", f"{_TENSOR}.narrow"), empty_operands.empty_narrow_wrapper,
             "narrow of length 0 raises on CPU ('must be in range of [1, ...]'; PyTorch: the empty piece, also at "
             "start == size)"),
            ((f"{_COMPARISON}.topk", f"{_TENSOR}.topk"), empty_operands.empty_topk_wrapper,
             "topk with k = 0 raises on CPU (TopK: 'k must be in (0, n]'; PyTorch: empty values and indices)"),
            (("msadapter.nn.functional.layer_norm",), empty_operands.empty_layer_norm_wrapper,
             "layer_norm of a tensor without elements (a shard or an MoE expert without tokens) raises on CPU "
             "(LayerNorm: 'dimension must be at least 1'; PyTorch: the empty output, zero weight/bias gradients)")):
        for target in targets:
            registry.register(target, wrapper, kind="wrap", requires=_MSADAPTER, purpose=why)


def _register_alpha(registry: Any) -> None:
    """Register PyTorch's ``alpha=`` for add/sub/subtract (mindspeed_ms.compat.alpha_ops)."""
    from mindspeed_ms.compat import alpha_ops

    for target in ("msadapter.ops.pointwise.sub", f"{_TENSOR}.sub"):
        registry.register(
            target, alpha_ops.sub_alpha_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="sub drops alpha= on CPU (torch.sub(a, b, alpha=2) is a - b, silently; PyTorch: a - 2 * b): "
                    "an alpha other than 1 is add(a, b, alpha=-alpha), as PyTorch's sub kernel computes it")
    for target in ("msadapter.ops.pointwise.add", f"{_TENSOR}.add"):
        registry.register(
            target, alpha_ops.add_alpha_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="add with a float alpha and integer tensors gives floats on CPU, and bool tensors with an int "
                    "alpha an integer sum (PyTorch: RuntimeError; a or b): PyTorch's alpha checks and bool rule")
    registry.register(
        "msadapter.ops.pointwise.subtract", alpha_ops.subtract_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.subtract refuses alpha= and out= with a TypeError on CPU (PyTorch takes both): torch.sub")


def _register_grad_edges(registry: Any) -> None:
    """Register PyTorch's gradients at the edges (mindspeed_ms.compat.grad_edges and nn_edges, conformance
    ops_special_grad)."""
    from mindspeed_ms.compat import grad_edges, nn_edges, reduction_grad_edges

    for target, ord_name in ((f"{_REDUCTION}.norm", "p"), (f"{_TENSOR}.norm", "p"),
                             ("msadapter.linalg.vector_norm", "ord")):
        registry.register(
            target, reduction_grad_edges.norm_wrapper(ord_name), kind="wrap", requires=_MSADAPTER,
            purpose="the gradient of a 2-norm (p > 1) of a zero slice is nan on CPU (0 / 0; PyTorch: 0): for an "
                    "input that requires a gradient, the op's values with PyTorch's norm backward")
    registry.register(
        "msadapter.nn.functional.normalize", nn_edges.normalize_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.normalize drops eps (input / norm: nan for a zero row; PyTorch: input / norm.clamp_min(eps))")
    registry.register(
        "msadapter.nn.functional.dropout", nn_edges.dropout_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.dropout(p=1) raises on CPU (keep_prob must be > 0; PyTorch: input * 0)")
    registry.register(
        "msadapter.nn.functional.cross_entropy", nn_edges.cross_entropy_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="cross_entropy (mean) with every target ignored has a nan gradient on CPU (PyTorch: zeros); "
                "a float16 input gives a float32 loss (PyTorch: float16)")
    registry.register(
        "msadapter.nn.functional.logsigmoid", nn_edges.logsigmoid_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="logsigmoid is -inf at -100 on CPU and its gradient nan at -inf, 0 for large x (PyTorch: "
                "min(x, 0) - log1p(exp(-|x|)) and its exact backward)")
    for target in (f"{_POINTWISE}.sign", f"{_TENSOR}.sign"):
        registry.register(
            target, grad_edges.sign_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="sign has no gradient on CPU (x.grad stays None; PyTorch: zeros)")
    for target in ("msadapter.ops.other.cumprod", f"{_TENSOR}.cumprod"):
        registry.register(
            target, reduction_grad_edges.cumprod_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="the gradient of cumprod through a zero is nan on CPU (a division by the input; PyTorch's "
                    "exact formula): for an input that requires a gradient and holds a zero")
    for target in (f"{_POINTWISE}.pow", f"{_TENSOR}.pow", f"{_TENSOR}.__pow__"):
        registry.register(
            target, grad_edges.pow_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="the gradient of pow(x, 0) is nan at x == 0 on CPU (0 * x ** -1; PyTorch: 0)")


def _register_refusals(registry: Any) -> None:
    """Register the refusal-class fixes of mindspeed_ms.compat.refusals."""
    from mindspeed_ms.compat import refusals

    for op, targets in (("torch.max", (f"{_REDUCTION}.max", f"{_TENSOR}.max")),
                        ("torch.min", (f"{_REDUCTION}.min", f"{_TENSOR}.min")),
                        ("torch.topk", (f"{_COMPARISON}.topk", f"{_TENSOR}.topk"))):
        for target in targets:
            registry.register(
                target, refusals.refusal_class_wrapper(op), kind="wrap", requires=_MSADAPTER,
                purpose=f"{op} refuses an empty input / k larger than the dim with ValueError on CPU (PyTorch: "
                        f"RuntimeError): re-raised as OpShapeRefusedError, a RuntimeError")


def _register_index_bounds(registry: Any) -> None:
    """Register the index checks of mindspeed_ms.compat.index_bounds."""
    from mindspeed_ms.compat import index_bounds

    for op, targets in (("gather", ("msadapter.ops.array.gather", f"{_TENSOR}.gather")),
                        ("index_select", ("msadapter.ops.array.index_select", f"{_TENSOR}.index_select")),
                        ("scatter", ("msadapter.ops.array.scatter", f"{_TENSOR}.scatter")),
                        ("scatter_add", ("msadapter.ops.array.scatter_add", f"{_TENSOR}.scatter_add")),
                        ("index_add_", (f"{_TENSOR}.index_add_", f"{_TENSOR}.index_add"))):
        for target in targets:
            registry.register(
                target, index_bounds.index_bounds_wrapper(op), kind="wrap", requires=_MSADAPTER,
                purpose=f"{op} with an index equal to the size or negative returns normally on CPU (gather and "
                        f"scatter silently read/write elsewhere; index_select and index_add_ wrap negatives); "
                        f"PyTorch refuses (index_select: IndexError, the others: RuntimeError)")
    registry.register(
        f"{_TENSOR}.__setitem__", index_bounds.empty_index_setitem_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="t[index] = v with an empty index tensor raises ValueError on CPU (PyTorch writes nothing), and with "
                "an index equal to the size ValueError (PyTorch: IndexError)")
    registry.register(
        "msadapter.ops.array.where", index_bounds.where_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.where(condition) of an all-False 1-d condition gives two (0, 1) tensors on CPU (PyTorch: "
                "condition.nonzero(as_tuple=True), one (0,) tensor)")
