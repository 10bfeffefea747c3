"""The msadapter_cpu_edges provider's half precision: bfloat16 and float16 ops as PyTorch's CPU kernels round them.

A private part of :mod:`mindspeed_ms.patches.msadapter_cpu_edges` (its ``register`` calls
:func:`register_half_precision`, in the provider's order); conformance families fix_half_precision* compare each
with real PyTorch.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_TENSOR = "mindspore.common.tensor.Tensor"
_REDUCTION = "msadapter.ops.reduction"
_COMPARISON = "msadapter.ops.comparison"
_POINTWISE = "msadapter.ops.pointwise"
#: bfloat16 ops without a CPU kernel (MindSpore's TypeError "Select CPU operator[...] fail!"): their targets
_BFLOAT16_FUNCTIONS = (
    "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "sin", "cos", "erf", "abs", "neg", "relu", "floor", "ceil",
    "round", "trunc", "square", "reciprocal", "sign", "expm1", "log1p", "pow", "sub", "floor_divide",
    "remainder", "clamp")
_BFLOAT16_METHODS = (
    "clone", "sub", "__sub__", "__rsub__", "__floordiv__", "__mod__", "__pow__", "pow", "exp", "log", "sqrt", "rsqrt",
    "sigmoid", "tanh", "sin", "cos", "abs", "neg", "__neg__", "trunc", "floor", "ceil", "round", "square",
    "reciprocal", "clamp", "maximum", "minimum")
_BFLOAT16_INPLACE = ("sub_", "__isub__", "abs_", "exp_", "clamp_", "pow_", "__ipow__", "floor_divide_",
                     "remainder_", "__ifloordiv__", "__imod__")

_ARRAY = "msadapter.ops.array"
#: more bfloat16 ops a --bf16 model calls (MindSpeed-LLM's MoE routing and dispatch): (targets, wrapper, why)
_BFLOAT16_MORE = (
    ((f"{_COMPARISON}.topk", f"{_TENSOR}.topk", f"{_COMPARISON}.sort", f"{_TENSOR}.sort", f"{_COMPARISON}.argsort",
      f"{_TENSOR}.argsort", f"{_ARRAY}.index_select", f"{_TENSOR}.index_select", f"{_ARRAY}.gather",
      f"{_TENSOR}.gather", f"{_ARRAY}.scatter_add", f"{_TENSOR}.scatter_add", f"{_ARRAY}.index_add",
      f"{_TENSOR}.index_add", "msadapter.ops.blas.bmm", f"{_TENSOR}.bmm", "msadapter.ops.other.masked_fill",
      f"{_TENSOR}.masked_fill", f"{_ARRAY}.scatter", f"{_TENSOR}.scatter", f"{_REDUCTION}.logsumexp",
      f"{_TENSOR}.logsumexp", f"{_REDUCTION}.argmax", f"{_TENSOR}.argmax", "msadapter.ops.other.tril",
      f"{_TENSOR}.tril", "msadapter.ops.other.triu", f"{_TENSOR}.triu", "msadapter.nn.functional.pad",
      "msadapter.nn.functional.cross_entropy", "msadapter.ops.creation.ones_like", "msadapter.ops.blas.baddbmm",
      f"{_TENSOR}.baddbmm", f"{_ARRAY}.masked_select", f"{_TENSOR}.masked_select"), "via_float32_wrapper",
     "raises on CPU (TopK, Sort, Gather, GatherD, TensorScatterAdd, Scatter, BatchMatMul, MaskedFill, ReduceMax, "
     "Argmax, Tril, Triu, PadV3, LogSoftmax, OnesLike, MaskedSelect have no bfloat16 kernel): "
     "computed in float32 (selection exact; sums and products accumulated in float32 and rounded once, as PyTorch's "
     "CPU kernels), cast back"),
    ((f"{_REDUCTION}.all", f"{_TENSOR}.all", f"{_REDUCTION}.any", f"{_TENSOR}.any", f"{_REDUCTION}.count_nonzero",
      f"{_TENSOR}.count_nonzero", f"{_COMPARISON}.equal", f"{_TENSOR}.equal", "msadapter.ops.other.flip",
      f"{_TENSOR}.flip", *(f"{where}.logical_{name}" for where in (_POINTWISE, _TENSOR)
                           for name in ("and", "or", "not", "xor")),
      f"{_ARRAY}.nonzero", f"{_TENSOR}.nonzero", f"{_REDUCTION}.amax", f"{_TENSOR}.amax", f"{_REDUCTION}.prod",
      f"{_TENSOR}.prod"), "via_float32_wrapper",
     "raises on CPU (NotEqual, Equal, ReverseV2, LogicalAnd/Or/Not/Xor, NonZero, ReduceMax, ReduceProd have "
     "no bfloat16 kernel; the OpInfo sweep's 'Unsupported data type'): computed in float32 (tests, selections and "
     "maxima exact; a product accumulated in float32 and rounded once, as PyTorch's CPU kernel), cast back"),
    ((f"{_ARRAY}.where", f"{_TENSOR}.where", f"{_ARRAY}.stack"), "any_via_float32_wrapper",
     "raises on CPU (Select, Stack have no bfloat16 kernel; the bfloat16 operand is not the first argument): the "
     "bfloat16 operands in float32 (exact), cast back"),
    (("msadapter.ops.creation.full", "msadapter.ops.creation.eye"), "zeros_wrapper",
     "raises on CPU (FillV2, Eye have no bfloat16 kernel): made in float32, cast (exact)"),
    ((f"{_TENSOR}.scatter_", f"{_TENSOR}.scatter_add_", f"{_TENSOR}.index_add_", f"{_TENSOR}.masked_fill_"),
     "inplace_via_float32_wrapper",
     "raises on CPU (TensorScatterUpdate/Add, MaskedFill have no bfloat16 kernel): applied to a float32 copy, "
     "written back through views"),
    ((f"{_TENSOR}.__setitem__",), "setitem_wrapper",
     "recorded by autograd raises on CPU (TensorScatterUpdate, ScatterNd have no bfloat16 kernel; megatron's "
     "VocabParallelEmbedding under tensor parallelism): assigned in a float32 copy (exact), copied back"),
    ((f"{_ARRAY}.unbind", f"{_TENSOR}.unbind", f"{_ARRAY}.chunk", f"{_TENSOR}.chunk", f"{_ARRAY}.narrow",
      f"{_TENSOR}.narrow", f"{_TENSOR}.expand"), "view_in_float32_wrapper",
     "that requires grad fails at backward() on CPU (Zeros, SliceGrad have no bfloat16 kernel): selected in float32 "
     "(exact), cast back; the pieces are copies, marked: an in-place write into one (or into the input while one "
     "is alive) raises"),
    ((f"{_REDUCTION}.argmin", f"{_TENSOR}.argmin", f"{_ARRAY}.tile", f"{_TENSOR}.tile", f"{_TENSOR}.repeat"),
     "via_float32_wrapper",
     "raises on CPU (ArgMin, Tile have no bfloat16 kernel; the OpInfo sweep): selected or moved in float32 (exact), "
     "bfloat16 results cast back"),
    (("msadapter.ops.other.repeat_interleave", f"{_TENSOR}.repeat_interleave"), "grad_in_float32_wrapper",
     "that requires grad fails at backward() on CPU (ReduceSum has no bfloat16 kernel): computed in float32 "
     "(exact), cast back"),
)


def _register_bfloat16(registry: Any) -> None:
    """Register bfloat16 through float32 for the elementwise ops without a bfloat16 CPU kernel (last: outermost,
    so every float32 repair below runs on the widened operands)."""
    from mindspeed_ms.compat import bfloat16, bfloat16_ops

    targets = (*(f"{_POINTWISE}.{name}" for name in _BFLOAT16_FUNCTIONS), "msadapter.ops.other.clone",
               f"{_COMPARISON}.maximum", f"{_COMPARISON}.minimum", "msadapter.nn.functional.relu",
               "msadapter.nn.functional.sigmoid", "msadapter.nn.functional.softplus",
               # F.silu is x * sigmoid(x) on CPU: two bfloat16 ops, rounded twice (PyTorch's kernel rounds once;
               # 2771 of 11008 values differed, SwiGLU of every --bf16 llama MLP); the whole of it in float32
               "msadapter.nn.functional.silu",
               "msadapter.ops.blas.outer", f"{_TENSOR}.outer",  # Mul of the outer product (the OpInfo sweep)
               *(f"{_TENSOR}.{name}" for name in _BFLOAT16_METHODS))
    for target in targets:
        registry.register(
            target, bfloat16_ops.elementwise_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"{target.rpartition('.')[2]} of bfloat16 raises on CPU (no bfloat16 kernel); PyTorch's CPU kernel "
                    f"computes in float32 and rounds once: computed in float32, rounded back (PyTorch's result dtype)")
    from mindspeed_ms.compat import nn_edges

    for target in ("msadapter.nn.functional.log_softmax", f"{_TENSOR}.log_softmax"):
        registry.register(
            target, nn_edges.bfloat16_log_softmax_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="log_softmax of bfloat16 raises on CPU (LogSoftmax has no bfloat16 kernel); PyTorch computes in "
                    "float32 and rounds once, its backward from the rounded output: the same")
    for target in ("msadapter.nn.functional.log_softmax", f"{_TENSOR}.log_softmax"):
        registry.register(
            target, nn_edges.dtype_first_log_softmax_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="log_softmax(x, dim, dtype=...) computes in x's dtype and casts the result on CPU (float16 -> "
                    "float32: ~3e-4 off, silently; bfloat16: TypeError); PyTorch casts x first")
    for target in (f"{_POINTWISE}.nan_to_num", f"{_TENSOR}.nan_to_num"):
        registry.register(
            target, bfloat16_ops.nan_to_num_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="nan_to_num of bfloat16 raises on CPU (no bfloat16 kernel): computed in float32 with bfloat16's "
                    "largest value for +-inf (PyTorch's default), rounded back")
    for names, wrapper, purpose in _BFLOAT16_MORE:
        for target in names:
            registry.register(target, getattr(bfloat16, wrapper), kind="wrap", requires=_MSADAPTER,
                              purpose=f"{target.rpartition('.')[2]} of bfloat16 {purpose}")
    for method in _BFLOAT16_INPLACE:
        registry.register(
            f"{_TENSOR}.{method}", bfloat16.inplace_via_float32_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"Tensor.{method} of a bfloat16 tensor raises on CPU (no bfloat16 kernel): applied to a float32 "
                    f"copy, written back through views")


def _register_float16(registry: Any) -> None:
    """Register float16 through float32 for the activations whose float16 CPU kernels compute in half precision
    (PyTorch's widen to float32 and round once: --fp16's SwiGLU and softmax)."""
    from mindspeed_ms.compat import float16_ops

    for target in ("msadapter.nn.functional.silu", "msadapter.nn.functional.sigmoid", f"{_POINTWISE}.sigmoid",
                   f"{_TENSOR}.sigmoid", f"{_POINTWISE}.softmax", f"{_TENSOR}.softmax",
                   "msadapter.nn.functional.softmax"):
        registry.register(
            target, float16_ops.via_float32_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"{target.rpartition('.')[2]} of float16 computes in half precision on CPU (silu: x * sigmoid(x), "
                    f"rounded twice); PyTorch's CPU kernel computes in float32 and rounds once: the same here")
    from mindspeed_ms.compat import half_activations

    for name in ("sigmoid", "tanh", "softmax"):  # after the bfloat16 and float16 wraps: outermost of them
        for target in (f"msadapter.nn.functional.{name}", f"{_POINTWISE}.{name}", f"{_TENSOR}.{name}"):
            registry.register(
                target, getattr(half_activations, f"{name}_wrapper"), kind="wrap", requires=_MSADAPTER,
                purpose=f"{name} of float16/bfloat16: the gradient came from the float32 output (through the casts); "
                        f"PyTorch's backward starts from the rounded half-precision output: the same here")
    registry.register(
        "msadapter.nn.functional.gelu", half_activations.tanh_gelu_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="gelu(approximate='tanh') of float16/bfloat16: no bfloat16 kernel, and the float32 kernels' tanh is "
                "off by up to 1e-4 (gradients a step off PyTorch's): ATen's float32 formula, tanh from float64")


def register_half_precision(registry: Any) -> None:
    """Register the bfloat16, then the float16 fixes."""
    _register_bfloat16(registry)
    _register_float16(registry)
