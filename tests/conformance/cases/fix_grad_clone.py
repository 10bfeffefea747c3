"""Autograd paths that need MindSpore's Clone kernel on CPU (mindspeed_ms.compat.grad_clone): add with leaf operands
both requiring grad, retain_grad, clamp_; requires_grad_ refused on integer tensors."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import tensor

_WEIGHTS = (0.5, -1.0, 2.0)


def _leaves(torch: Any) -> tuple[Any, Any, Any]:
    a = tensor(torch, (3,), seed=1, requires_grad=True)
    c = tensor(torch, (3,), seed=2, requires_grad=True)
    return a, c, torch.tensor(_WEIGHTS)


@case("Tensor.__add__", "torch.add", "Tensor.add")
def add_of_leaves_grads(torch: Any) -> Any:
    out = {}
    for name, op in {"leaf_leaf": lambda t, a, c: a + c,
                     "nonleaf_leaf": lambda t, a, c: (a * 2) + c,
                     "leaf_nonleaf": lambda t, a, c: a + (c * 3),
                     "chain_reuses_leaf": lambda t, a, c: (a + c) + a,
                     "self_plus_self": lambda t, a, c: a + a,
                     "clone_leaf": lambda t, a, c: a.clone() + c,
                     "clones": lambda t, a, c: a.clone() + c.clone(),
                     "python_sum": lambda t, a, c: sum([a, c]),
                     "alpha_clone": lambda t, a, c: t.add(a.clone(), c, alpha=2),
                     "alpha": lambda t, a, c: t.add(a, c, alpha=2),
                     "alpha_float": lambda t, a, c: t.add(a, c, alpha=-0.5),
                     "method": lambda t, a, c: a.add(c),
                     "method_alpha": lambda t, a, c: a.add(c, alpha=3)}.items():
        a, c, w = _leaves(torch)
        y = op(torch, a, c)
        (y * w).sum().backward()
        out[name] = {"y": y.detach(), "a": a.grad, "c": c.grad, "y_leaf": y.is_leaf}
    return out


@case("Tensor.__add__")
def add_of_leaves_bias_and_residual_grads(torch: Any) -> Any:
    x = tensor(torch, (4, 3), seed=3, requires_grad=True)
    bias = tensor(torch, (3,), seed=4, requires_grad=True)
    residual = tensor(torch, (4, 3), seed=5, requires_grad=True)
    h = x * 2 + bias
    y = h + residual
    (y * tensor(torch, (4, 3), seed=6)).sum().backward()
    twice = tensor(torch, (3,), seed=7, requires_grad=True)
    (twice + twice + twice).sum().backward()
    a = tensor(torch, (3, 2), seed=8, requires_grad=True)
    c = tensor(torch, (2, 3), seed=9, requires_grad=True)
    (a.t() + c).mul(tensor(torch, (2, 3), seed=10)).sum().backward()
    return {"x": x.grad, "bias": bias.grad, "residual": residual.grad, "twice": twice.grad, "a_t": a.grad,
            "c": c.grad}


@case("Tensor.__add__")
def add_of_leaves_accumulates_over_backwards(torch: Any) -> Any:
    a, c, w = _leaves(torch)
    ((a + c) * w).sum().backward()
    ((a + c) * w).sum().backward()
    half = tensor(torch, (2,), dtype="float16", seed=8).requires_grad_()
    other = tensor(torch, (2,), dtype="float16", seed=9).requires_grad_()
    (half + other).sum().backward()
    return {"a": a.grad, "c": c.grad, "half": half.grad, "other": other.grad}


@case("Tensor.retain_grad", "Tensor.retains_grad")
def retain_grad_keeps_accumulates_and_leaves(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    y = x * 3
    before = y.retains_grad
    y.retain_grad()
    y.retain_grad()  # a second call keeps one hook
    z = y * y
    z.sum().backward(retain_graph=True)
    first = y.grad.clone()
    z.sum().backward()
    leaf = tensor(torch, (2,), seed=1, requires_grad=True)
    leaf.retain_grad()
    (leaf * 2).sum().backward()
    return {"before": before, "after": y.retains_grad, "first": first, "accumulated": y.grad, "x": x.grad,
            "leaf": leaf.grad, "leaf_retains": leaf.retains_grad}


@case("Tensor.retain_grad")
def retain_grad_without_requires_grad_raises(torch: Any) -> Any:
    return tensor(torch, (3,)).retain_grad()


@case("Tensor.clamp_")
def clamp_bounds(torch: Any) -> Any:
    x = tensor(torch, (2, 3))
    low = x.clone().clamp_(min=0.0)
    high = x.clone().clamp_(max=0.25)
    ints = torch.tensor([-3, 0, 5]).clamp_(-1, 2)
    t = tensor(torch, (2, 3)).clamp_(torch.tensor(-0.5), torch.tensor(0.5))
    return {"low": low, "high": high, "ints": ints, "tensor_bounds": t}


@case("Tensor.clamp_")
def clamp_of_int_with_float_bound_raises(torch: Any) -> Any:
    return torch.tensor([1, 2]).clamp_(0.5, 1.5)


@case("Tensor.requires_grad_")
def requires_grad_of_bool_raises(torch: Any) -> Any:
    return torch.tensor([True, False]).requires_grad_()


@case("Tensor.requires_grad_")
def requires_grad_off_on_int_and_on_float(torch: Any) -> Any:
    ints = torch.tensor([1, 2]).requires_grad_(False)
    floats = torch.tensor([1.0]).requires_grad_()
    half = torch.tensor([1.0]).half().requires_grad_()
    return {"ints": ints.requires_grad, "floats": floats.requires_grad, "half": half.requires_grad}


@case("Tensor.grad", "Tensor.requires_grad")
def grad_reads_warn_only_for_a_non_leaf_not_retained(torch: Any) -> Any:
    """Which ``.grad`` reads warn (a non-leaf that requires grad and does not retain it), and what they return;
    ``requires_grad`` of leaves, results and detached tensors (both properties read MindSpore's attributes)."""
    import warnings

    x = tensor(torch, (3,), requires_grad=True)
    y = x * 2
    kept = x * 3
    kept.retain_grad()
    (y.sum() + kept.sum()).backward()
    plain = tensor(torch, (3,), seed=1)
    out = {}
    for name, value in {"leaf": x, "non_leaf": y, "retained": kept, "plain": plain, "detached": y.detach()}.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            grad = value.grad
        out[name] = {"warned": any(issubclass(w.category, UserWarning) for w in caught), "grad": grad,
                     "requires_grad": value.requires_grad}
    return out
