"""The msadapter provider's registrations of torch API that MSAdapter lacks, refuses, or lays out in memory otherwise
than PyTorch (as_tensor's sharing, clone's strides).

Not a provider itself (its name starts with ``_``): :mod:`mindspeed_ms.patches.msadapter` calls
:func:`register_absent` from its ``register``. The replacements live in
:mod:`mindspeed_ms.compat.absent_functions`, :mod:`~mindspeed_ms.compat.attention_function` and
:mod:`~mindspeed_ms.compat.memory_layout`; the conformance cases tests/conformance/cases/fix_absent_functions.py,
fix_attention_function.py and fix_memory_layout.py compare them with PyTorch.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

from ._msadapter_memory_formats import register_memory_formats

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_TENSOR = "mindspore.common.tensor.Tensor"
_ABSENT = "mindspeed_ms.compat.absent_functions"

#: target -> (replacement in compat, does the target exist under MSAdapter, why)
_REPLACEMENTS: dict[str, tuple[str, bool, str]] = {
    "msadapter.result_type": (f"{_ABSENT}:result_type", False, "torch.result_type does not exist under MSAdapter"),
    "msadapter.promote_types": (f"{_ABSENT}:promote_types", False,
                                "torch.promote_types does not exist under MSAdapter"),
    f"{_TENSOR}.new_tensor": (f"{_ABSENT}:new_tensor", False, "Tensor.new_tensor does not exist under MSAdapter"),
    "msadapter.diag_embed": (f"{_ABSENT}:diag_embed", False, "torch.diag_embed does not exist under MSAdapter"),
    f"{_TENSOR}.diag_embed": (f"{_ABSENT}:diag_embed", False, "Tensor.diag_embed does not exist under MSAdapter"),
    "msadapter.cummax": (f"{_ABSENT}:cummax", False, "torch.cummax does not exist under MSAdapter"),
    "msadapter.cummin": (f"{_ABSENT}:cummin", False, "torch.cummin does not exist under MSAdapter"),
    "msadapter.ops.array.tensor_split": (
        f"{_ABSENT}:tensor_split", True,
        "torch.tensor_split(x, sections) raises TypeError ('int' object is not iterable); PyTorch: that many pieces"),
    f"{_TENSOR}.tensor_split": (
        f"{_ABSENT}:tensor_tensor_split", True,
        "Tensor.tensor_split(sections) raises TypeError ('int' object is not iterable); PyTorch: that many pieces"),
    "msadapter.nn.functional.scaled_dot_product_attention": (
        "mindspeed_ms.compat.attention_function:scaled_dot_product_attention", True,
        "F.scaled_dot_product_attention requires attn_mask, dropout_p and is_causal (TypeError without them), has "
        "no scale or enable_gqa, and its causal branch fails; PyTorch 2.13: masks, causal, GQA, safe softmax"),
    "msadapter.ops.tensor.as_tensor": (
        "mindspeed_ms.compat.memory_layout:as_tensor", True,
        "torch.as_tensor(ndarray) copies the array: writes through either are not seen by the other (PyTorch shares "
        "the memory), and as_tensor(t) of a tensor is a copy (PyTorch: t itself)"),
}
_ARRAY = "mindspeed_ms.compat.absent_array_functions"
#: target -> function of compat.absent_array_functions, for names that do not exist under MSAdapter
_ARRAY_FUNCTIONS = {
    **{f"msadapter.{name}": name for name in ("movedim", "take_along_dim", "block_diag", "tril_indices",
                                              "triu_indices", "nanmean", "logaddexp")},
    f"{_TENSOR}.unflatten": "tensor_unflatten",
    f"{_TENSOR}.take_along_dim": "take_along_dim",
}


def register_absent(registry: Any) -> None:
    """Register PyTorch's versions of the torch functions and Tensor methods MSAdapter lacks or refuses."""
    register_memory_formats(registry)
    for target, (replacement, exists, why) in _REPLACEMENTS.items():
        registry.register(target, replacement, create_dummy=not exists, requires=_MSADAPTER, purpose=why)
    for target, function in _ARRAY_FUNCTIONS.items():
        name = target.rpartition(".")[2]
        registry.register(target, f"{_ARRAY}:{function}", create_dummy=True, requires=_MSADAPTER,
                          purpose=f"{'Tensor' if target.startswith(_TENSOR) else 'torch'}.{name} does not exist "
                                  f"under MSAdapter")
    from mindspeed_ms.compat import absent_array_functions, absent_functions, memory_layout

    registry.register(
        "msadapter.ops.other.unflatten", absent_array_functions.unflatten_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.unflatten(x, dim, sizes) reshapes the whole tensor to sizes (ValueError unless dim is the only "
                "dim); PyTorch splits dim into sizes")
    registry.register(
        f"{_TENSOR}.logaddexp", f"{_ARRAY}:logaddexp_method", requires=_MSADAPTER,
        purpose="Tensor.logaddexp of two equal infinities is nan (PyTorch: that infinity)")

    for target, wrapper in ((f"{_TENSOR}.clone", memory_layout.tensor_clone_wrapper),
                            ("msadapter.ops.other.clone", memory_layout.clone_wrapper)):
        registry.register(
            target, wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="clone() of a non-contiguous tensor is contiguous (PyTorch's default preserve_format keeps the "
                    "strides: is_contiguous() said True where PyTorch says False), and memory_format is not taken")

    registry.register(
        "msadapter.nn.functional.one_hot", absent_functions.one_hot_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.one_hot(t) without num_classes fails in MindSpore's OneHot ('depth ... got -1'; PyTorch: the "
                "largest class + 1); class values out of range are not refused")
    registry.register(
        "msadapter.nn.functional.conv1d", absent_functions.conv1d_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.conv1d with groups > 1 (Mamba's depthwise convolution, nn.Conv1d(groups=...)) fails in MindSpore's "
                "Conv2D (MSAdapter builds it with out_channel = weight.shape[0] * groups)")
    registry.register(
        "msadapter.ops.aten", "mindspeed_ms.compat.explicit_grads:AtenFunctions", requires=_MSADAPTER,
        purpose="torch.ops.aten is None under MSAdapter: torch.ops.aten.silu_backward (MindSpeed-LLM's Mamba "
                "context-parallel backward) raised AttributeError")
    registry.register(
        "msadapter.nn.grad", "mindspeed_ms.compat.explicit_grads:NnGrad", create_dummy=True, requires=_MSADAPTER,
        purpose="torch.nn.grad does not exist under MSAdapter: conv1d_input / conv1d_weight (MindSpeed-LLM's Mamba "
                "context-parallel backward) raised AttributeError")
    from mindspeed_ms.compat import conformance_misc

    for target, why in (
            ("msadapter.ops.other.einsum", "torch.einsum('sec,ecm->sm', ...) (MindSpeed's MoE combine)"),
            ("msadapter.nn.functional.multi_head_attention_forward", "nn.MultiheadAttention's forward")):
        registry.register(
            target, conformance_misc.internal_views_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"{why} raised the view refusal: MSAdapter's code views the transposes it makes itself; inside "
                    f"it the view's copy is what it means")
