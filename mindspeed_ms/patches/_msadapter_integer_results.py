"""The msadapter provider's registrations that keep integer and bool results outside autograd.

Not a provider itself (its name starts with ``_``): :mod:`mindspeed_ms.patches.msadapter` calls
:func:`register_integer_results` from its ``register``. Compared with real PyTorch by
tests/conformance/cases/ops_integer_results.py.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)

_TENSOR = "mindspore.common.tensor.Tensor"
_COMPARISON = "msadapter.ops.comparison"
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_SPECIAL_VALUES = ("isnan", "isinf", "isfinite")
_LOGICAL = ("logical_and", "logical_or", "logical_xor", "logical_not")

#: module of the torch function -> the ops there whose result is (or holds) an integer or bool tensor
_FUNCTIONS: dict[str, tuple[str, ...]] = {
    _COMPARISON: (*_COMPARISONS, "greater", "less", "less_equal", "not_equal", *_SPECIAL_VALUES, "isclose"),
    "msadapter.ops.pointwise": _LOGICAL,
    "msadapter.ops.reduction": ("argmax", "argmin", "unique", "unique_consecutive", "count_nonzero", "all", "any"),
    "msadapter.ops.array": ("nonzero", "argwhere", "where"),
    "msadapter.ops.other": ("searchsorted", "bincount"),
}
#: Tensor methods likewise (casts: an integer or bool target dtype; ``to``/``type`` keep a float result's history)
_METHODS = (*_COMPARISONS, *(f"__{name}__" for name in _COMPARISONS), "greater", "greater_equal", "less",
            "less_equal", "not_equal", *_SPECIAL_VALUES, "isneginf", "isposinf", "isclose", *_LOGICAL, "argmax",
            "argmin", "nonzero", "argwhere", "unique", "searchsorted", "bincount", "count_nonzero", "all", "any",
            "long", "int", "short", "byte", "to", "type")


def register_integer_results(registry: Any) -> None:
    """Register :func:`~mindspeed_ms.compat.integer_results.outside_autograd` on every op that turns a float tensor
    into an integer or bool one (conformance cases ``ops_integer_results.*``)."""
    from mindspeed_ms.compat import integer_results

    targets = [f"{module}.{name}" for module, names in _FUNCTIONS.items() for name in names]
    targets += [f"{_TENSOR}.{name}" for name in _METHODS]
    for target in targets:
        registry.register(
            target, integer_results.outside_autograd, kind="wrap", requires=_MSADAPTER,
            purpose="an integer or bool result of a float tensor that requires grad got a graph node (requires_grad "
                    "True, grad_fn <Greater>/<Cast>/...; PyTorch: a leaf without grad): masks and indices made the "
                    "float tensors written or computed with them record, and writes into views of buffers raise")
    registry.register(
        "msadapter.tensor", integer_results.tensor_factory_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.tensor([1, 2], requires_grad=True) makes an integer tensor that requires grad; PyTorch raises "
                "RuntimeError (only floating point and complex tensors can require gradients)")
    for name in ("zeros_like", "ones_like", "empty_like"):
        registry.register(
            f"msadapter.ops.creation.{name}", integer_results.like_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"torch.{name}(t) of a tensor that requires grad was recorded as computed from t (requires_grad "
                    f"True, a grad_fn, in any dtype); PyTorch: a new leaf without grad")
