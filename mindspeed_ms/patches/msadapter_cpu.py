"""Built-in provider: gaps of MSAdapter and MindSpore's CPU backend, so models run without an NPU.

Registered only when MindSpore computes on the CPU (see :mod:`mindspeed_ms.device`); on Ascend the
kernels exist and nothing here is registered.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

from ._msadapter_cpu_collectives import register_collectives
from ._msadapter_cpu_device import register_device
from ._msadapter_cpu_ieee import register_ieee

name = "msadapter_cpu"
requires = (MSADAPTER_REQUIREMENT,)

_MINDSPORE = (MINDSPORE_REQUIREMENT,)
_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_TENSOR = "mindspore.common.tensor.Tensor"

#: Tensor method -> why it is replaced on the CPU backend.
_INPLACE = {
    "zero_": "Tensor.zero_ raises on CPU: the InplaceZero kernel has no CPU implementation",
    "masked_fill_": "Tensor.masked_fill_ raises on CPU: InplaceMaskedFillScalar has no CPU kernel",
    "add_": "Tensor.add_ on CPU returns a new tensor and leaves self unchanged (silent)",
    "sub_": "Tensor.sub_ (and -=) on CPU returns a new tensor and leaves self unchanged (silent); "
            "megatron's cross entropy then gives NaN",
    "mul_": "Tensor.mul_ on CPU returns a new tensor and leaves self unchanged (silent)",
    "div_": "Tensor.div_ on CPU returns a new tensor and leaves self unchanged (silent); "
            "megatron's cross entropy softmax was left unnormalised",
    "exp_": "Tensor.exp_ on CPU returns a new tensor and leaves self unchanged (silent)",
    "fill_": "Tensor.fill_ on a view on CPU changes neither the view nor its base (silent); megatron fills "
             "views of its grad buffers; it also accepts a 1-element 1-d value tensor (PyTorch: 0-d only)",
    "detach_": "Tensor.detach_ raises on CPU (InplaceStopGradient has no kernel; megatron's zero_grad_group_helper "
               "calls it): a leaf stops requiring grad, a tensor with history raises a typed error",
    "floor_divide_": "Tensor.floor_divide_ (and //=) on CPU returns a new tensor and leaves self unchanged (silent)",
    "remainder_": "Tensor.remainder_ (and %=) on CPU returns a new tensor and leaves self unchanged (silent)",
}
#: Every replacement above also raises where PyTorch refuses the write (mindspeed_ms.compat.inplace_checks):
#: a result that cannot be cast to self's dtype (MindSpore truncates: tensor([1, 2]).div_(2) gave [0, 1]),
#: elements sharing memory (expand) or partly overlapping an input (a[1:].copy_(a[:-1]) shifted silently),
#: a leaf that requires grad.

#: Tensor methods absent under MSAdapter -> their replacement and why they are created.
_CREATED = {
    "pow_": ("pow_", "Tensor.pow_ does not exist under MSAdapter (AttributeError); PyTorch raises self to a "
                     "power in place"),
    "__iand__": ("bitwise_and_", "&= has no in-place form under MSAdapter (x = x & y): aliases and a view's "
             "base keep the old values (silent)"),
    "__ior__": ("bitwise_or_", "|= has no in-place form under MSAdapter (x = x | y): aliases and a view's "
             "base keep the old values (silent)"),
    "__ixor__": ("bitwise_xor_", "^= has no in-place form under MSAdapter (x = x ^ y): aliases and a view's "
             "base keep the old values (silent)"),
    "__ipow__": ("ipow", "**= has no in-place form under MSAdapter: Python falls back to x = x ** y, so aliases and a "
                "view's base keep the old values (silent)"),
}

#: In-place operator -> its replacement (mindspeed_ms.compat.inplace_ops) and why.
_OPERATORS = {
    "__iadd__": ("iadd", "+= on CPU returns a new tensor (the name is rebound): aliases, a view's base and a "
                         "Parameter (which becomes a plain Tensor) keep the old values (silent)"),
    "__isub__": ("isub", "-= on CPU returns a new tensor: aliases and a view's base keep the old values (silent)"),
    "__itruediv__": ("itruediv", "/= on CPU returns a new tensor: aliases and a view's base keep the old values "
                                 "(silent), and an integer tensor is truncated where PyTorch refuses"),
    "__ifloordiv__": ("ifloordiv", "//= on CPU returns a new tensor: aliases and a view's base keep the old "
                                   "values (silent)"),
    "__imod__": ("imod", "%= on CPU returns a new tensor: aliases and a view's base keep the old values (silent)"),
}
#: Every in-place replacement above writes through views (mindspeed_ms.compat.inplace); a view that
#: autograd records raises InPlaceOnViewError instead of returning unchanged.

#: MSAdapter op or Tensor method -> (replacement in mindspeed_ms.compat.msadapter_cpu_ops, kind, why). Off Ascend
#: MSAdapter calls mindspore.ops functions whose semantics are not PyTorch's.
_OPS = {
    "msadapter.ops.reduction.std": ("std", "replace", "torch.std divides by N with a dim (PyTorch: N - 1)"),
    f"{_TENSOR}.std": ("tensor_std", "replace", "Tensor.std(dim=...) divides by N (PyTorch: N - 1) and "
                                                "Tensor.std() raises TypeError"),
    "msadapter.ops.reduction.var": ("var", "replace", "torch.var has no CPU kernel (Var unregistered)"),
    f"{_TENSOR}.var": ("tensor_var", "replace", "Tensor.var(dim=...) has no CPU kernel and Tensor.var() raises"),
    "msadapter.ops.comparison.topk": ("topk_wrapper", "wrap", "torch.topk returns a plain tuple with int32 "
                                                              "indices (PyTorch: .values/.indices, int64)"),
    f"{_TENSOR}.topk": ("topk_wrapper", "wrap", "Tensor.topk returns a plain tuple with int32 indices"),
    "msadapter.ops.comparison.sort": ("sort", "replace", "torch.sort takes dim by keyword only and returns a "
                                                         "plain tuple with int32 indices"),
    f"{_TENSOR}.sort": ("sort_wrapper", "wrap", "Tensor.sort returns a plain tuple with int32 indices"),
    "msadapter.ops.comparison.argsort": ("int64_indices_wrapper", "wrap", "torch.argsort returns int32 (PyTorch: "
                                                                          "int64)"),
    f"{_TENSOR}.argsort": ("int64_indices_wrapper", "wrap", "Tensor.argsort returns int32 (PyTorch: int64)"),
    "msadapter.ops.reduction.argmin": ("int64_indices_wrapper", "wrap", "torch.argmin without dim returns int32 "
                                                                        "(PyTorch: int64)"),
    f"{_TENSOR}.argmin": ("int64_indices_wrapper", "wrap", "Tensor.argmin without dim returns int32 (PyTorch: "
                                                           "int64)"),
    "msadapter.ops.reduction.max": ("max_wrapper", "wrap", "torch.max(x, dim) returns a plain tuple (PyTorch: "
                                                           ".values/.indices)"),
    "msadapter.ops.reduction.min": ("min_wrapper", "wrap", "torch.min(x, dim) returns a plain tuple (PyTorch: "
                                                           ".values/.indices)"),
    f"{_TENSOR}.max": ("max_wrapper", "wrap", "Tensor.max(dim) returns an object that is not a tuple"),
    f"{_TENSOR}.min": ("min_wrapper", "wrap", "Tensor.min(dim) returns a plain tuple (PyTorch: .values/.indices)"),
    "msadapter.ops.other.bincount": ("bincount", "replace", "torch.bincount counts in float32 (PyTorch: int64)"),
    "msadapter.ops.array.index_add": ("index_add", "replace", "torch.index_add rejects int64 indices (IndexAdd "
                                                              "takes int32), and the failure switched autograd off"),
    f"{_TENSOR}.index_add": ("tensor_index_add", "replace", "Tensor.index_add rejects int64 indices"),
    f"{_TENSOR}.index_add_": ("tensor_index_add_", "replace", "Tensor.index_add_ has no CPU kernel "
                                                              "(InplaceIndexAddExt)"),
    "msadapter.nn.functional.embedding": ("embedding", "replace", "F.embedding ignores padding_idx: the padding "
                                                                  "row's gradient is not zeroed"),
    f"{_TENSOR}.__setitem__": ("setitem_through_views_wrapper", "wrap",
                               "t[i] = v gives t new memory: a view's base (view/t/narrow) and views taken "
                               "before keep the old values (silent), and a slice of an int64 tensor keeps only "
                               "the low 32 bits (int64 list all-gathers lost their high bits)"),
}

#: torch_npu fused op -> its mindspeed_ms.ops composite (msadapter's versions call Ascend-only kernels).
_TORCH_NPU = ("npu_rms_norm", "npu_swiglu", "npu_rotary_position_embedding")


def _register_cuda_tensor_types(registry: Any) -> None:
    """Register ``torch.cuda.<Kind>Tensor`` that no CPU tensor is an instance of (mindspeed_ms.compat.tensor_type)."""
    from mindspeed_ms.compat import tensor_type

    for name in tensor_type.CUDA_TENSOR_TYPES:
        registry.register(
            f"msadapter.cuda.{name}", tensor_type.cpu_cuda_tensor_type_wrapper(name), kind="wrap", requires=_MSADAPTER,
            purpose=f"MSAdapter's torch.cuda.{name} is the Tensor class: isinstance(t, torch.cuda.{name}) held for "
                    "every tensor (megatron's Float16Module turned the token ids into bfloat16 under --bf16); on the "
                    "CPU backend no tensor is a CUDA one")


def register(registry: Any, args: Any) -> None:
    """Register the CPU-backend patches, or nothing when MindSpore does not compute on the CPU.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.device import device_target

    if device_target() != "CPU":
        return
    from mindspeed_ms.compat import msadapter_cpu as compat

    for method, purpose in _INPLACE.items():
        registry.register(f"{_TENSOR}.{method}", getattr(compat, method), requires=_MINDSPORE, purpose=purpose)
    for method, (replacement, purpose) in _CREATED.items():
        registry.register(f"{_TENSOR}.{method}", getattr(compat, replacement), create_dummy=True,
                          requires=_MINDSPORE, purpose=purpose)
    for method, (replacement, purpose) in _OPERATORS.items():
        registry.register(f"{_TENSOR}.{method}", getattr(compat, replacement), requires=_MINDSPORE, purpose=purpose)
    from mindspeed_ms.compat import msadapter_cpu_ops as ops_compat

    for target, (replacement, kind, purpose) in _OPS.items():
        registry.register(target, getattr(ops_compat, replacement), kind=kind, requires=_MSADAPTER, purpose=purpose)
    from mindspeed_ms.compat import tensor_identity

    for target, wrapper, purpose in (
            (f"{_TENSOR}.to", tensor_identity.identity_to_wrapper,
             "x.to(x.dtype) / x.to('cpu') returns a copy (PyTorch: x itself): in-place writes to it miss x (silent)"),
            (f"{_TENSOR}.cpu", tensor_identity.identity_cpu_wrapper,
             "x.cpu() returns a copy (PyTorch: x itself for a CPU tensor): in-place writes to it miss x (silent)"),
            ("msadapter.ops.array.cat", tensor_identity.cat_promotion_wrapper,
             "torch.cat of int64 and float32 tensors fails (Concat takes one dtype); PyTorch promotes")):
        registry.register(target, wrapper, kind="wrap", requires=_MSADAPTER, purpose=purpose)
    registry.register(
        f"{_TENSOR}.__truediv__", compat.true_divide, requires=_MSADAPTER,
        purpose="Tensor / on CPU goes through NumPy under MSAdapter: 0-d tensors raise 'Expected a NumPy array' "
                "(megatron's training loop), and int / int gives float64 (PyTorch: float32)")
    registry.register(
        f"{_TENSOR}.copy_", compat.write_through_copy, kind="wrap", requires=_MINDSPORE,
        purpose="Tensor.copy_ on a view (view, narrow, transpose, slices) on CPU returns a new tensor and changes "
                "neither the view nor its base (silent); megatron copies into views of its grad buffers")
    registry.register(
        "msadapter.ops.creation.empty", compat.cpu_device_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.empty(device=torch.cuda.current_device()) means Ascend and fails on CPU "
                "(megatron's GlobalMemoryBuffer, gather buffers); torch.empty(size=...) raised TypeError "
                "(transformers' from_pretrained)")
    registry.register(
        "msadapter.ops.reduction.norm", compat.frobenius_norm_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.norm(vector) with the default p='fro' raises on CPU (megatron's grad clipping), and "
                "torch.norm(matrix, p=2) is the spectral norm (PyTorch flattens: the 2-norm of all elements)")
    register_device(registry)
    registry.register(
        "msadapter.distributed.distributed_c10d.init_process_group", compat.cpu_backend_wrapper, kind="wrap",
        requires=_MSADAPTER,
        purpose="init_process_group(backend='nccl'/'hccl') needs HCCL, absent on CPU; 'gloo' works under msrun")
    register_collectives(registry)
    _register_conformance(registry)
    _register_index_kernels(registry)
    _register_conformance_misc(registry)
    _register_grad_clone(registry)
    _register_cuda_tensor_types(registry)
    register_ieee(registry)
    import mindspeed_ms.ops as ops

    for op in _TORCH_NPU:
        registry.register(
            f"torch_npu.{op}", getattr(ops, op), requires=_MSADAPTER,
            purpose=f"msadapter's torch_npu.{op} calls an Ascend-only fused kernel; use the mindspeed_ms.ops "
                    f"composite on CPU")
    from mindspeed_ms.compat import torch_npu as npu_compat

    registry.register(
        "torch_npu.npu_fusion_attention_grad", npu_compat.npu_fusion_attention_grad, requires=_MSADAPTER,
        purpose="msadapter's torch_npu.npu_fusion_attention_grad calls FlashAttentionScoreGrad (no CPU kernel; "
                "ring-attention context parallelism's backward): the composite from the saved softmax statistics")
    registry.register(
        "torch_npu.npu_matmul_add_fp32", npu_compat.npu_matmul_add_fp32, requires=_MSADAPTER,
        purpose="msadapter's torch_npu.npu_matmul_add_fp32 loads an ATB op builder (none on CPU): MindSpeed's "
                "gradient-accumulation fusion; the composite, main_grad += grad_output^T @ input in float32")
    registry.register(
        "torch_npu.npu_groupmatmul_add_fp32", ops.npu_groupmatmul_add_fp32, create_dummy=True, requires=_MSADAPTER,
        purpose="msadapter's torch_npu has no npu_groupmatmul_add_fp32: MindSpeed-LLM's MindSpore adaptation imports "
                "it under --gemm-gradient-accumulation-fusion (the experts' grouped weight-gradient accumulation); "
                "the composite, main_grad += x_g^T @ dy_g per group in float32")
    registry.register(
        "torch_npu.npu_rotary_mul", npu_compat.npu_rotary_mul, requires=_MSADAPTER,
        purpose="msadapter's torch_npu.npu_rotary_mul calls RotaryPositionEmbedding, which has no CPU kernel "
                "(MindSpeed-LLM's legacy RoPE under --use-fused-rotary-pos-emb)")
    registry.register(
        "torch_npu.npu_fusion_attention", npu_compat.npu_fusion_attention, requires=_MSADAPTER,
        purpose="msadapter's torch_npu.npu_fusion_attention calls FlashAttentionScore, which has no CPU kernel")


def _register_grad_clone(registry: Any) -> None:
    """Register the fixes of autograd paths that need the Clone kernel, absent on CPU (compat/grad_clone.py)."""
    from mindspeed_ms.compat import grad_clone

    for target in (f"{_TENSOR}.__add__", f"{_TENSOR}.add", "msadapter.ops.pointwise.add"):
        registry.register(
            target, grad_clone.add_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="a + c with both requiring grad and a leaf among them fails at backward ('The kernel Clone "
                    "unregistered': the engine clones add's shared dout for the leaf): both operands enter via a view")
    for name, purpose in (
            ("retain_grad", "y.retain_grad() fails at backward (the engine clones the kept gradient: no CPU Clone "
                            "kernel): a tensor hook keeps it"),
            ("retains_grad", "Tensor.retains_grad for the retain_grad() above"),
            ("grad", "Tensor.grad of a retain_grad() tensor (no warning once retained)"),
            ("clamp_", "Tensor.clamp_ calls InplaceClampScalar, which needs the Clone kernel (absent on CPU): "
                       "clamped out of place, written back through views")):
        registry.register(f"{_TENSOR}.{name}", getattr(grad_clone, name), requires=_MSADAPTER, purpose=purpose)
    registry.register(
        f"{_TENSOR}.register_hook", grad_clone.register_hook_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="a hook registered after retain_grad() ran after the retain_grad hook: .grad kept the gradient "
                "before that hook changed it (PyTorch keeps the one after every hook)")


_REDUCTION = "msadapter.ops.reduction"


def _register_conformance(registry: Any) -> None:
    """Register the reduction fixes of MSAdapter's CPU path (tests/conformance/cases/ops_reduce.py)."""
    from mindspeed_ms.compat import reductions

    for target in (f"{_REDUCTION}.sum", f"{_TENSOR}.sum"):
        registry.register(
            target, reductions.empty_sum_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="sum over an empty dimension returns uninitialised memory on CPU (PyTorch: 0)")
    for target in (f"{_REDUCTION}.mean", f"{_TENSOR}.mean"):
        registry.register(
            target, reductions.mean_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="mean over an empty dimension returns inf/garbage on CPU (PyTorch: nan), and mean of an integer "
                    "tensor runs where PyTorch refuses it")
    registry.register(
        f"{_REDUCTION}.count_nonzero", reductions.count_nonzero, requires=_MSADAPTER,
        purpose="torch.count_nonzero counts in int32 (PyTorch: int64) and fails on bool on CPU")
    registry.register(
        f"{_TENSOR}.count_nonzero", reductions.tensor_count_nonzero, requires=_MSADAPTER,
        purpose="Tensor.count_nonzero counts in int32 (PyTorch: int64) and fails on bool on CPU")
    for target in ("msadapter.ops.other.cumsum", f"{_TENSOR}.cumsum"):
        registry.register(
            target, reductions.cumsum_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="cumsum of bool/int32 is int32 on CPU (PyTorch: int64) and of an empty tensor fails")
    for target in (f"{_REDUCTION}.argmax", f"{_TENSOR}.argmax"):
        registry.register(
            target, reductions.argmax_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="argmax over a dim of an empty tensor fails on CPU (PyTorch: an empty int64 result)")
    for target in (f"{_REDUCTION}.norm",):
        registry.register(
            target, reductions.norm_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="torch.norm(x, dim=d) with the default p='fro' raises on CPU ('ord mode can not be str for "
                    "vectors'); PyTorch computes the vector 2-norm over d (and the p-norm for a number p)")
    for name in ("max", "min"):
        for target in (f"{_REDUCTION}.{name}", f"{_TENSOR}.{name}"):
            registry.register(
                target, reductions.extreme_wrapper(name), kind="wrap", requires=_MSADAPTER,
                purpose=f"{name}(x, dim) of an empty tensor fails on CPU ({name.title()}Dim cannot deal with empty "
                        f"input; PyTorch: empty values and indices)")
    registry.register(
        f"{_TENSOR}.nonzero", reductions.tensor_nonzero, requires=_MSADAPTER,
        purpose="Tensor.nonzero(as_tuple=True) calls NonZeroExt, which has no CPU kernel")
    from mindspeed_ms.compat import bfloat16

    for target in ("msadapter.ops.blas.matmul", f"{_TENSOR}.matmul", f"{_TENSOR}.__matmul__",
                   "msadapter.ops.pointwise.softmax", f"{_TENSOR}.softmax", "msadapter.nn.functional.softmax",
                   "msadapter.nn.functional.layer_norm", "msadapter.nn.functional.linear",
                   "msadapter.ops.pointwise.mul", f"{_TENSOR}.mul",
                   "msadapter.ops.pointwise.div", f"{_TENSOR}.div", f"{_TENSOR}.__truediv__",
                   "msadapter.ops.comparison.eq", f"{_TENSOR}.eq", f"{_TENSOR}.__eq__",
                   *(target for name in ("ne", "ge", "gt", "le", "lt") for target in (
                       f"msadapter.ops.comparison.{name}", f"{_TENSOR}.{name}", f"{_TENSOR}.__{name}__")),
                   f"{_REDUCTION}.sum", f"{_TENSOR}.sum", f"{_REDUCTION}.max", f"{_TENSOR}.max",
                   "msadapter.ops.creation.zeros_like"):
        registry.register(
            target, bfloat16.via_float32_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"{target.rpartition('.')[2]} of bfloat16 fails on CPU (no bfloat16 kernel); PyTorch's CPU "
                    f"kernel accumulates in float32 and rounds once: compute in float32, cast back")
    for method in ("mul_", "div_", "fill_", "zero_"):
        registry.register(
            f"{_TENSOR}.{method}", bfloat16.inplace_via_float32_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"Tensor.{method} of a bfloat16 tensor fails on CPU (no bfloat16 kernel; megatron's bf16 grad "
                    f"buffers): applied to a float32 copy, written back")
    for target in (f"{_TENSOR}.__getitem__", "msadapter.ops.array.split", f"{_TENSOR}.split"):
        registry.register(
            target, bfloat16.view_in_float32_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"{target.rpartition('.')[2]} of a bfloat16 tensor that requires grad fails at backward() on "
                    f"CPU (StridedSliceGrad has no bfloat16 kernel; --bf16 models): selected in float32 (exact), "
                    f"cast back; the pieces are copies, marked: an in-place write into one (or into the input while "
                    f"one is alive) raises")
    registry.register(
        "msadapter.ops.creation.zeros", bfloat16.zeros_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.zeros(dtype=torch.bfloat16) fails on CPU (Zeros has no bfloat16 kernel)")
    from mindspeed_ms.compat import missing_ops

    registry.register(
        f"{_TENSOR}.select", missing_ops.select_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="Tensor.select of a tensor that requires grad fails at backward() on CPU (SelectExtView's gradient: "
                "InplaceCopy refuses a 3-d float32 input, Zeros has no bfloat16 kernel): indexed, as torch.select")
    registry.register(
        f"{_TENSOR}.roll", missing_ops.tensor_roll, requires=_MSADAPTER,
        purpose="Tensor.roll has no CPU kernel (Roll unregistered; torch.roll goes through mindspore.numpy)")


def _register_index_kernels(registry: Any) -> None:
    """Register the ops whose MindSpore kernel is missing on CPU (tests/conformance/cases/ops_index.py and others)."""
    from mindspeed_ms.compat import index_ops

    missing = {
        "index_copy": ("index_copy", True, "Tensor.index_copy does not exist under MSAdapter (AttributeError)"),
        "index_copy_": ("index_copy_", False, "Tensor.index_copy_ raises on CPU (InplaceIndexCopy unregistered)"),
        "index_put": ("index_put", False, "Tensor.index_put refuses values of rank other than 1 on CPU "
                                          "('the rank of x2 must be equal to 1'); PyTorch broadcasts them"),
        "index_put_": ("index_put_", False, "Tensor.index_put_ raises on CPU (InplaceIndexPut unregistered)"),
        "scatter_": ("scatter_", False, "Tensor.scatter_ with a value raises on CPU (InplaceScatterValue "
                                        "unregistered)"),
        "scatter_add": ("scatter_add", False, "Tensor.scatter_add raises on CPU (ScatterAddExt unregistered)"),
        "scatter_add_": ("scatter_add_", False, "Tensor.scatter_add_ raises on CPU (InplaceScatterAdd unregistered)"),
        "uniform_": ("uniform_", False, "Tensor.uniform_ raises on CPU (InplaceUniform unregistered; "
                                        "torch.nn.init.uniform_ and megatron's init methods)"),
        "exponential_": ("exponential_", False, "Tensor.exponential_ raises 'Not implement exception' on CPU"),
        "bitwise_not_": ("bitwise_not_", False, "Tensor.bitwise_not_ raises on CPU (BitwiseNot unregistered)"),
        "erfinv_": ("erfinv_", False, "Tensor.erfinv_ raises on CPU (InplaceErfinv unregistered; "
                                      "torch.nn.init.trunc_normal_)"),
    }
    for method, (replacement, create, purpose) in missing.items():
        registry.register(f"{_TENSOR}.{method}", getattr(index_ops, replacement), create_dummy=create,
                          requires=_MINDSPORE, purpose=purpose)
    registry.register(
        "msadapter.ops.pointwise.addcmul", index_ops.addcmul, requires=_MSADAPTER,
        purpose="torch.addcmul raises on CPU (AddcmulExt unregistered); input + value * tensor1 * tensor2")
    registry.register(
        "msadapter.ops.pointwise.addcdiv", index_ops.addcdiv, requires=_MSADAPTER,
        purpose="torch.addcdiv and Tensor.addcdiv_ raise on CPU (AddcdivExt unregistered; Adam's step)")


def _register_conformance_misc(registry: Any) -> None:
    """Register the CPU numerics fixes of conformance/cases/ops_unary.py (mindspeed_ms.compat.conformance_misc)."""
    from mindspeed_ms.compat import conformance_misc

    for target in ("msadapter.ops.pointwise.tanh", f"{_TENSOR}.tanh", "msadapter.nn.functional.tanh"):
        registry.register(
            target, conformance_misc.tanh_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="MindSpore's float32 Tanh CPU kernel is off by up to 1e-4 for 3 < |x| < 7 (1.00001 at x=5, "
                    "silently, on every float32 tanh); computed in float64 and rounded to float32")
