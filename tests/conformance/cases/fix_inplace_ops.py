"""In-place operators and methods fixed by the built-in providers: aliases, views, casts, overlap, autograd."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


def _operator(torch: Any, op: str, dtype: str) -> Any:
    start = torch.tensor(data((3, 4), dtype, seed=3, low=1, high=6))
    owner = start.clone()
    alias = owner
    base = start.clone()
    view = base[:, 1:3]
    other = 2 if dtype == "int64" else 1.5
    for target in (owner, view):
        if op == "+=":
            target += other
        elif op == "-=":
            target -= other
        elif op == "*=":
            target *= other
        elif op == "/=":
            target /= other
        elif op == "//=":
            target //= other
        elif op == "**=":
            target **= 2
        elif op == "%=":
            target %= other
    return {"owner": owner, "alias": alias, "alias_is_owner": alias is owner, "base": base, "view": view}


@case("Tensor.__iadd__", "Tensor.__isub__", "Tensor.__imul__", "Tensor.__itruediv__", "Tensor.__ifloordiv__",
      "Tensor.__ipow__", "Tensor.__imod__")
def inplace_operators_float32_reach_aliases_and_view_bases(torch: Any) -> Any:
    return {op: _operator(torch, op, "float32") for op in ("+=", "-=", "*=", "/=", "//=", "**=", "%=")}


@case("Tensor.__iadd__", "Tensor.__isub__", "Tensor.__imul__", "Tensor.__ifloordiv__", "Tensor.__ipow__",
      "Tensor.__imod__")
def inplace_operators_int64_reach_aliases_and_view_bases(torch: Any) -> Any:
    return {op: _operator(torch, op, "int64") for op in ("+=", "-=", "*=", "//=", "**=", "%=")}


@case("Tensor.__itruediv__")
def int64_true_division_in_place_refuses_float_result(torch: Any) -> Any:
    t = torch.tensor([1, 2, 3])
    t /= 2
    return t


@case("Tensor.__iadd__")
def iadd_on_transpose_and_narrow_views(torch: Any) -> Any:
    base = torch.tensor(data((3, 4), seed=5))
    t = base.t()
    t += 1
    n = base.narrow(1, 1, 2)
    n -= 3
    vv = base.view(12)[2:8].view(2, 3)
    vv *= 2
    return {"base": base, "t": t, "n": n, "vv": vv}


@case("Tensor.__iadd__")
def iadd_on_parameter_under_no_grad_keeps_it_a_parameter(torch: Any) -> Any:
    p = torch.nn.Parameter(torch.zeros(3))
    q = p
    with torch.no_grad():
        p += 1
    return {"p": p, "q": q, "same": p is q, "is_parameter": isinstance(p, torch.nn.Parameter),
            "requires_grad": p.requires_grad}


@case("Tensor.__iadd__")
def iadd_on_leaf_requiring_grad_raises(torch: Any) -> Any:
    p = torch.nn.Parameter(torch.zeros(3))
    p += 1
    return p


@case("Tensor.div_", "Tensor.mul_", "Tensor.add_", "Tensor.exp_", "Tensor.pow_", "Tensor.sub_")
def integer_inplace_with_float_result_refuses(torch: Any) -> Any:
    outcomes = {}
    for name, call in {"div_": lambda t: t.div_(2), "mul_": lambda t: t.mul_(1.5),
                       "add_tensor": lambda t: t.add_(torch.tensor(1.5)), "sub_": lambda t: t.sub_(0.5),
                       "exp_": lambda t: t.exp_(), "pow_": lambda t: t.pow_(0.5),
                       "bool_add_int": lambda t: t.bool().add_(1)}.items():
        t = torch.tensor([1, 2, 3])
        try:
            call(t)
            outcomes[name] = t
        except RuntimeError:
            outcomes[name] = "raises RuntimeError"
        outcomes[name + "_after"] = t
    return outcomes


@case("Tensor.div_")
def integer_div_with_rounding_mode_in_place(torch: Any) -> Any:
    out = {}
    for mode in ("trunc", "floor"):
        t = torch.tensor([5, -5, 3, -3, 7, -8])
        alias = t
        t.div_(2, rounding_mode=mode)
        out[mode] = alias
        out[mode + "_tensor"] = torch.tensor([5, -5, 9]).div_(torch.tensor([-2, 2, 3]), rounding_mode=mode)
    f = torch.tensor([5.5, -5.5, 3.0])
    out["float_trunc"] = f.div_(2, rounding_mode="trunc")
    return out


@case("Tensor.__truediv__", "torch.div")
def true_division_dtypes_and_0d(torch: Any) -> Any:
    i = torch.tensor([1, 2, 3])
    return {"int_int": i / torch.tensor([2, 2, 2]), "int_scalar": i / 2, "int_float": i / 2.0,
            "half": torch.tensor([1.0, 3.0], dtype=torch.float16) / 2.0, "0d": torch.tensor(3.0) / torch.tensor(2.0),
            "0d_scalar": torch.tensor(3.0) / 2.0, "0d_int": torch.tensor(3) / torch.tensor(2),
            "broadcast": torch.tensor(data((2, 3), seed=2)) / torch.tensor(data((3,), seed=4, low=1, high=3)),
            "by_zero": torch.tensor([1.0, -1.0, 0.0]) / 0.0, "rtruediv": 2.0 / torch.tensor([4.0, 8.0])}


@case("Tensor.__truediv__")
def true_division_keeps_gradients(torch: Any) -> Any:
    x = torch.tensor([1.0, 2.0, 4.0], requires_grad=True)
    y = torch.tensor(2.0, requires_grad=True)
    (x / y).sum().backward()
    return {"x": x.grad, "y": y.grad}


@case("Tensor.masked_fill_")
def masked_fill_int64_with_float_value(torch: Any) -> Any:
    t = torch.tensor([1, 2, 3, 4])
    t.masked_fill_(torch.tensor([True, False, True, False]), 2.5)
    b = torch.tensor([True, False, True])
    b.masked_fill_(torch.tensor([True, True, False]), 0)
    return {"int": t, "bool": b}


@case("Tensor.add_", "Tensor.mul_")
def bool_add_and_mul_in_place(torch: Any) -> Any:
    a = torch.tensor([True, False, False])
    a.add_(torch.tensor([True, True, False]))
    m = torch.tensor([True, False, True])
    m.mul_(torch.tensor([True, True, False]))
    return {"add": a, "mul": m}


@case("Tensor.sub_")
def bool_sub_in_place_raises(torch: Any) -> Any:
    return torch.tensor([True, False]).sub_(torch.tensor([True, True]))


@case("Tensor.copy_")
def copy_into_expanded_tensor_raises(torch: Any) -> Any:
    b = torch.zeros(3)
    b.expand(4, 3).copy_(torch.ones(4, 3))
    return b


@case("Tensor.add_")
def add_into_expanded_tensor_raises(torch: Any) -> Any:
    b = torch.zeros(3)
    b.expand(4, 3).add_(1)
    return b


@case("Tensor.copy_")
def copy_from_partly_overlapping_slice_raises(torch: Any) -> Any:
    a = torch.arange(5.0)
    a[1:].copy_(a[:-1])
    return a


@case("Tensor.copy_")
def copy_from_own_transpose_raises(torch: Any) -> Any:
    a = torch.arange(4.0).reshape(2, 2)
    a.copy_(a.t())
    return a


@case("Tensor.add_")
def add_from_partly_overlapping_slice_raises(torch: Any) -> Any:
    a = torch.arange(5.0)
    a[1:].add_(a[:-1])
    return a


@case("Tensor.copy_", "Tensor.add_")
def inplace_from_itself_and_disjoint_slices(torch: Any) -> Any:
    a = torch.arange(6.0)
    a.copy_(a)
    a.add_(a)
    a[:3].copy_(a[3:])
    return a


@case("Tensor.add_")
def add_that_broadcasts_self_raises(torch: Any) -> Any:
    return torch.zeros(3).add_(torch.ones(2, 3))


@case("Tensor.fill_")
def fill_with_one_element_1d_tensor_raises(torch: Any) -> Any:
    return torch.zeros(3).fill_(torch.tensor([2.0]))


@case("Tensor.fill_", "Tensor.zero_")
def fill_and_zero_with_0d_tensor_and_int_dtype(torch: Any) -> Any:
    f = torch.zeros(3).fill_(torch.tensor(2.5))
    i = torch.zeros(3, dtype=torch.int64).fill_(2.7)
    base = torch.ones(2, 3)
    base[:, 1].zero_()
    return {"f": f, "i": i, "base": base}


@case("Tensor.mul_")
def mul_inplace_on_non_leaf_backward(torch: Any) -> Any:
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = leaf * 2
    y.mul_(leaf)
    y.sum().backward()
    return {"y": y, "grad": leaf.grad}


@case("Tensor.div_", "Tensor.pow_")
def div_and_pow_inplace_on_non_leaf_backward(torch: Any) -> Any:
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    other = torch.tensor([2.0, 4.0, 5.0], requires_grad=True)
    y = leaf * 3
    y.div_(other)
    y.pow_(2)
    y.sum().backward()
    return {"y": y, "leaf": leaf.grad, "other": other.grad}


@case("Tensor.zero_")
def zero_inplace_on_non_leaf_backward_gives_zero_grad(torch: Any) -> Any:
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = leaf * 2
    y.zero_()
    y.sum().backward()
    return leaf.grad


@case("Tensor.fill_", "Tensor.masked_fill_")
def fill_and_masked_fill_inplace_backward(torch: Any) -> Any:
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = leaf * 2
    y.masked_fill_(torch.tensor([True, False, False]), 0.0)
    z = leaf * 1
    z.fill_(4.0)
    (y.sum() + z.sum()).backward()
    return {"y": y, "z": z, "grad": leaf.grad}


@case("Tensor.add_", "Tensor.sub_")
def add_sub_inplace_with_alpha_on_views(torch: Any) -> Any:
    base = torch.zeros(2, 4)
    base[:, :2].add_(torch.ones(2, 2), alpha=3)
    base[1].sub_(torch.tensor([1.0, 2.0, 3.0, 4.0]), alpha=0.5)
    return base


@case("torch.baddbmm", "Tensor.baddbmm")
def baddbmm_with_beta_zero_ignores_nan_input(torch: Any) -> Any:
    a = torch.tensor(data((2, 3, 4), seed=6))
    b = torch.tensor(data((2, 4, 5), seed=7))
    buffer = torch.full((2, 3, 5), float("nan"))
    buffer[0, 0, 0] = float("inf")
    return {"fn": torch.baddbmm(buffer, a, b, beta=0.0, alpha=0.5), "method": buffer.baddbmm(a, b, beta=0),
            "broadcast_input": torch.baddbmm(torch.full((1, 3, 5), float("nan")), a, b, beta=0.0),
            "beta_one": torch.baddbmm(torch.ones(2, 3, 5), a, b, beta=1.0, alpha=2.0)}


@case("torch.nn.functional.cross_entropy")
def cross_entropy_on_cpu(torch: Any) -> Any:
    logits = torch.tensor(data((4, 5), seed=8), requires_grad=True)
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 3, 4, 1]))
    loss.backward()
    return {"loss": loss, "grad": logits.grad}


@case("Tensor.index_add")
def failing_op_leaves_autograd_working(torch: Any) -> Any:
    x = torch.ones(2, requires_grad=True)
    y = x * 3
    try:
        torch.zeros(3).index_add(0, torch.tensor([0, 2]), torch.ones(2), alpha=torch.ones(3))
    except Exception:  # noqa: BLE001  (only what comes after matters)
        pass
    try:
        torch.zeros(2, 3) @ torch.zeros(2, 3)
    except Exception:  # noqa: BLE001
        pass
    (y * x).sum().backward()
    try:
        x.reshape("a")  # a C++ Tensor method failing on its argument
    except Exception:  # noqa: BLE001
        pass
    z = torch.ones(2, requires_grad=True)
    (z * 2).sum().backward()
    return {"x": x.grad, "z": z.grad, "grad_enabled": torch.is_grad_enabled()}


@case("Tensor.reshape", "torch.nn.Module.__call__")
def failing_tensor_method_leaves_training_working(torch: Any) -> Any:
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(data((2, 3), seed=40)))
        model.bias.zero_()
    for bad in (lambda: torch.ones(3).reshape("a"), lambda: torch.sum(torch.ones(3), dim="a")):
        try:
            bad()
        except Exception:  # noqa: BLE001  (only what comes after matters)
            pass
    model(torch.tensor(data((4, 3), seed=41))).pow(2).sum().backward()
    try:
        torch.ones(3).flip("a")
    except Exception:  # noqa: BLE001
        pass
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)  # a new leaf: recorded again
    (leaf * leaf).sum().backward()
    return {"weight": model.weight.grad, "bias": model.bias.grad, "leaf": leaf.grad}


@case("Tensor.__setitem__")
def setitem_on_owner_reaches_views_taken_before(torch: Any) -> Any:
    b = torch.zeros(2, 3)
    v = b.view(6)
    t = b.t()
    b[...] = 1.0
    b[0, 1:] = torch.tensor([5.0, 6.0])
    b[torch.tensor([False, True])] = 9.0
    return {"b": b, "v": v, "t": t}


@case("Tensor.__setitem__")
def setitem_with_grad_keeps_gradients(torch: Any) -> Any:
    x = torch.tensor(data((2, 3), seed=42), requires_grad=True)
    y = x * 2
    y[0, 1:] = 0.0
    buffer = torch.zeros(2, 4)
    buffer[:, 1:] = y
    buffer.sum().backward()
    return {"y": y, "buffer": buffer, "grad": x.grad}


@case("Tensor.detach_")
def detach_in_place_of_a_leaf_gradient(torch: Any) -> Any:
    # megatron's zero_grad_group_helper: grad.detach_() (grad_fn set) else requires_grad_(False), then zero_()
    p = torch.nn.Parameter(torch.ones(3))
    (p * 2).sum().backward()
    grad = p.grad
    if grad.grad_fn is not None:
        grad.detach_()
    else:
        grad.requires_grad_(False)
    leaf = torch.ones(2, requires_grad=True)
    returned = leaf.detach_()
    return {"returns_self": returned is leaf, "requires_grad": leaf.requires_grad, "is_leaf": leaf.is_leaf,
            "grad": p.grad}
