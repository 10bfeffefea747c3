"""The msadapter provider's fixes found by PyTorch's OpInfo samples (scripts/opinfo_sweep.py).

Not a provider itself (its name starts with ``_``): :func:`mindspeed_ms.patches._msadapter_conformance.
register_conformance` calls :func:`register_opinfo_fixes`. The replacements are in
:mod:`mindspeed_ms.compat.result_shapes`; tests/conformance/cases/fix_result_shapes.py compares them with PyTorch.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_TENSOR = "mindspore.common.tensor.Tensor"


def register_opinfo_fixes(registry: Any) -> None:
    """Register PyTorch's result shapes of any/squeeze/nonzero/flatten and the gradients of clone/masked_fill
    (every MindSpore device), and bool/narrow-integer inputs without a CPU kernel (:func:`_register_integer_kernels`).
    """
    from mindspeed_ms.compat import lost_gradients, result_shapes

    _register_zero_dim_fixes(registry)
    _register_silent_leftovers(registry)

    registry.register(
        "msadapter.ops.reduction.any", result_shapes.any_dims_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.any(x, dim, keepdim=True) drops the reduced dimension ((3, 5) -> (5,); PyTorch (1, 5)), "
                "silently; a tuple dim raises")
    registry.register(
        f"{_TENSOR}.any", result_shapes.any_dims_method_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x.any(dim=(0, 1)) raises TypeError (MindSpore's Tensor.any takes one int dim); PyTorch reduces each")
    for target in ("msadapter.ops.array.squeeze", f"{_TENSOR}.squeeze"):
        registry.register(
            target, result_shapes.squeeze_no_dims_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="squeeze(x, ()) squeezes every size-1 dimension ((1, 1, 1, 1) -> ()); PyTorch squeezes none")
    registry.register(
        "msadapter.ops.array.nonzero", result_shapes.nonzero_tuple_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.nonzero(x, as_tuple=True) of a tensor without a nonzero element returns two (0, ndim) "
                "tensors; PyTorch: ndim tensors of shape (0,)")
    registry.register(
        f"{_TENSOR}.flatten", result_shapes.flatten_method_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x.flatten(1) returns a copy (writes through it are lost; PyTorch: a view) and fails for bfloat16")
    registry.register(
        "msadapter.ops.other.clone", lost_gradients.clone_graph_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.clone(x) is copy.deepcopy off Ascend: a new leaf, x receives no gradient (PyTorch: the "
                "identity's), silently")
    for target in ("msadapter.ops.other.masked_fill", f"{_TENSOR}.masked_fill"):
        registry.register(
            target, lost_gradients.masked_fill_value_grad_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="masked_fill with a 0-d value tensor that requires grad gives the value no gradient (PyTorch: "
                    "the sum of the gradient at the masked places)")
    registry.register(
        f"{_TENSOR}.ravel", result_shapes.ravel_method_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x.ravel() of a non-contiguous tensor (a step slice) returns a view: writes into it change x; "
                "PyTorch copies (contiguous().view(-1))")
    registry.register(
        "msadapter.ops.creation.arange", result_shapes.arange_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="arange(0, 2.5, 1, dtype=int64) computes in float ([0, 1, 2]; PyTorch truncates the bounds to "
                "integers first: [0, 1]); step=0 is accepted (PyTorch: ValueError)")


def _register_zero_dim_fixes(registry: Any) -> None:
    """0-d inputs PyTorch treats as one-element vectors (mindspeed_ms.compat.zero_dim_inputs)."""
    from mindspeed_ms.compat import zero_dim_inputs as zd

    refused = "a 0-d input raises an untyped MindSpore error (the primitive refuses rank 0); PyTorch: a 0-d result"
    groups: tuple[tuple[tuple[str, ...], Any], ...] = (
        (("msadapter.ops.pointwise.softmax", f"{_TENSOR}.softmax", "msadapter.nn.functional.softmax",
          "msadapter.ops.other.cumsum", f"{_TENSOR}.cumsum", "msadapter.ops.other.cumprod", f"{_TENSOR}.cumprod",
          "msadapter.ops.comparison.sort", f"{_TENSOR}.sort", "msadapter.ops.comparison.argsort",
          f"{_TENSOR}.argsort"), zd.zero_dim_as_vector_wrapper),
        (("msadapter.ops.array.index_select", f"{_TENSOR}.index_select"), zd.zero_dim_index_select_wrapper),
        (("msadapter.ops.comparison.topk", f"{_TENSOR}.topk"), zd.zero_dim_topk_wrapper),
        (("msadapter.ops.array.nonzero", f"{_TENSOR}.nonzero"), zd.zero_dim_nonzero_wrapper),
        (("msadapter.ops.array.transpose",), zd.zero_dim_transpose_wrapper),
    )
    for targets, wrapper in groups:
        for target in targets:
            registry.register(target, wrapper, kind="wrap", requires=_MSADAPTER,
                              purpose=f"{target.rsplit('.', 1)[-1]}: {refused}")


def _register_silent_leftovers(registry: Any) -> None:
    """ceil/round's lost gradient, view/reshape's ambiguous -1 of 0 elements, Tensor.put/put_ (OpInfo sweep)."""
    from mindspeed_ms.compat import bool_alpha, empty_reshapes, lost_gradients

    for target in ("msadapter.ops.pointwise.ceil", f"{_TENSOR}.ceil", "msadapter.ops.pointwise.round",
                   f"{_TENSOR}.round"):
        registry.register(
            target, lost_gradients.zero_gradient_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"{target.rsplit('.', 1)[-1]}(x) of an x that requires grad has no graph: x.grad stays None "
                    "(PyTorch: zeros), silently")
    registry.register(
        f"{_TENSOR}.add_", bool_alpha.bool_alpha_inplace_add_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x.add_(y, alpha=False) of bool tensors ignores alpha (x | y), silently; PyTorch: x unchanged")
    for target in (f"{_TENSOR}.view", f"{_TENSOR}.reshape"):
        registry.register(
            target, empty_reshapes.ambiguous_method_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"x.{target.rsplit('.', 1)[-1]}(0, -1) of 0 elements gives (0, 0), silently; PyTorch raises "
                    "RuntimeError (-1 is ambiguous)")
    from mindspeed_ms.compat import bool_sorts

    for target in ("msadapter.ops.comparison.sort", f"{_TENSOR}.sort", "msadapter.ops.comparison.argsort",
                   f"{_TENSOR}.argsort"):
        registry.register(target, bool_sorts.bool_sort_wrapper, kind="wrap", requires=_MSADAPTER,
                          purpose=f"{target.rsplit('.', 1)[-1]} of a bool tensor raises an untyped TypeError (no "
                                  "bool Sort kernel); PyTorch sorts False before True")
    registry.register(f"{_TENSOR}.put", "mindspeed_ms.compat.tensor_put:put", create_dummy=True, requires=_MSADAPTER,
                      purpose="Tensor.put does not exist under MSAdapter")
    registry.register(f"{_TENSOR}.put_", "mindspeed_ms.compat.tensor_put:put_", requires=_MSADAPTER,
                      purpose="Tensor.put_ raises 'There is no branch to go function tensor_put_!' for every input")
    registry.register(
        "msadapter.ops.array.reshape", empty_reshapes.ambiguous_function_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.reshape(x, (0, -1)) of 0 elements gives (0, 0), silently; PyTorch raises RuntimeError")
    from mindspeed_ms.compat import pad_modes

    registry.register(
        "msadapter.nn.functional.pad", pad_modes.pad_modes_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.pad(mode='replicate') always raises (MSAdapter passes value=0.0 on), mode='reflect' of a 5-d input "
                "raises (PadV3 reflects 4 dims at most), PyTorch's refusals come as MindSpore's ValueError or not "
                "at all")
    _register_integer_kernels(registry)


def _register_integer_kernels(registry: Any) -> None:
    """bool and narrow integer inputs whose MindSpore CPU kernel is missing (compat.integer_kernels)."""
    from mindspeed_ms.compat import integer_kernels

    for name in ("max", "min", "amax", "amin"):
        for target in (f"msadapter.ops.reduction.{name}", f"{_TENSOR}.{name}"):
            registry.register(
                target, integer_kernels.bool_reduction_wrapper, kind="wrap", requires=_MSADAPTER,
                purpose=f"{name} of a bool tensor raises on CPU (Reduce has no bool kernel); PyTorch gives a bool: "
                        f"computed in uint8, cast back")
    for target in ("msadapter.ops.pointwise.sign", f"{_TENSOR}.sign"):
        registry.register(
            target, integer_kernels.narrow_sign_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="sign of uint8/int8/int16 raises on CPU (Sign has no such kernel): computed in int32, cast back")
    for target in ("msadapter.ops.reduction.logsumexp", f"{_TENSOR}.logsumexp"):
        registry.register(
            target, integer_kernels.integer_logsumexp_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="logsumexp of a bool/integer tensor raises on CPU (no integer Exp); PyTorch promotes to float32")
    for target in ("msadapter.ops.pointwise.div", f"{_TENSOR}.div"):
        registry.register(
            target, integer_kernels.trunc_div_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="div(rounding_mode='trunc') of int64/int16/bool raises on CPU (Trunc has no such kernel): a "
                    "floor division corrected toward zero (exact), bool promoted to int64 as PyTorch")
    for name in ("argmax", "argmin"):
        for target in (f"msadapter.ops.reduction.{name}", f"{_TENSOR}.{name}"):
            registry.register(
                target, integer_kernels.bool_arg_refusal_wrapper, kind="wrap", requires=_MSADAPTER,
                purpose=f"{name} of a bool tensor returns an index (silently); PyTorch raises RuntimeError: "
                        f"TorchRefusalError with PyTorch's message")
