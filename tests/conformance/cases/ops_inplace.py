"""In-place ops through every view kind (owner, alias, view, slice, narrow, transpose, select, view of a view):
the view, its base and an alias of the base must all show the write, the op returns ``self``; writes into
``expand``ed (overlapping) memory and integer results of float math are refused; autograd through in-place ops."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import VIEWS, register, tensor

# name -> (ops, apply(torch, view) -> returned value)
INPLACE: dict[str, tuple[tuple[str, ...], Callable[[Any, Any], Any]]] = {
    "iadd": (("Tensor.__iadd__",), lambda torch, v: v.__iadd__(1.5)),
    "isub": (("Tensor.__isub__",), lambda torch, v: v.__isub__(0.5)),
    "imul": (("Tensor.__imul__",), lambda torch, v: v.__imul__(3.0)),
    "itruediv": (("Tensor.__itruediv__",), lambda torch, v: v.__itruediv__(4.0)),
    "ifloordiv": (("Tensor.__ifloordiv__",), lambda torch, v: v.__ifloordiv__(0.5)),
    "ipow": (("Tensor.__ipow__",), lambda torch, v: v.__ipow__(2)),
    "add_": (("Tensor.add_",), lambda torch, v: v.add_(torch.ones_like(v), alpha=2)),
    "sub_": (("Tensor.sub_",), lambda torch, v: v.sub_(1.0)),
    "mul_": (("Tensor.mul_",), lambda torch, v: v.mul_(torch.full_like(v, 2.0))),
    "div_": (("Tensor.div_",), lambda torch, v: v.div_(2.0)),
    "copy_": (("Tensor.copy_",), lambda torch, v: v.copy_(torch.arange(v.numel(), dtype=v.dtype).view(v.shape))),
    "copy_broadcast": (("Tensor.copy_",), lambda torch, v: v.copy_(torch.tensor(7.0))),
    "fill_": (("Tensor.fill_",), lambda torch, v: v.fill_(5.0)),
    "fill_zero_dim_tensor": (("Tensor.fill_",), lambda torch, v: v.fill_(torch.tensor(-1.0))),
    "zero_": (("Tensor.zero_",), lambda torch, v: v.zero_()),
    "masked_fill_": (("Tensor.masked_fill_",), lambda torch, v: v.masked_fill_(v > 0, -9.0)),
    "clamp_": (("Tensor.clamp_",), lambda torch, v: v.clamp_(-0.5, 0.5)),
    "abs_": (("Tensor.abs_",), lambda torch, v: v.abs_()),
    "tril_": (("Tensor.tril_",), lambda torch, v: v.tril_() if v.dim() == 2 else v.abs_()),
    "uniform_shape": (("Tensor.uniform_",), lambda torch, v: (v.uniform_(2.0, 3.0) >= 2.0).all()),
    "setitem_all": (("Tensor.__setitem__",), lambda torch, v: v.__setitem__(Ellipsis, 4.0)),
    "setitem_row": (("Tensor.__setitem__",), lambda torch, v: v.__setitem__(0, 8.0)),
}


def _make(name: str, ops: tuple[str, ...], apply: Callable[[Any, Any], Any], kind: str) -> None:
    shape, make_view = VIEWS[kind]

    def run(torch: Any) -> Any:
        base = tensor(torch, shape, seed=11)
        alias = base
        view = make_view(base)
        returned = apply(torch, view)
        out = {"view": view, "base": base, "alias": alias}
        if name == "uniform_shape":
            return {"in_range": returned, "view_shape": tuple(view.shape)}
        if not name.startswith("setitem"):  # __setitem__'s return value is not part of its contract
            out["returns_self"] = returned is view
        return out

    register(__name__, f"{name}__{kind}", ops, run)


for _name, (_ops, _apply) in INPLACE.items():
    for _kind in VIEWS:
        _make(_name, _ops, _apply, _kind)


def _expand_write(op: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        base = torch.zeros(3)
        wide = base.expand(4, 3)
        op(torch, wide)
        return {"base": base, "wide": wide}
    return run


for _name, _op in {"copy_": lambda torch, w: w.copy_(torch.ones(4, 3)),
                   "add_": lambda torch, w: w.add_(torch.ones(4, 3)),
                   "iadd": lambda torch, w: w.__iadd__(torch.ones(4, 3)),
                   "mul_": lambda torch, w: w.mul_(torch.ones(4, 3)),
                   "fill_": lambda torch, w: w.fill_(1.0)}.items():
    _op_name = "Tensor.__iadd__" if _name == "iadd" else f"Tensor.{_name}"
    register(__name__, f"{_name}__expand_overlapping_write", (_op_name,), _expand_write(_op))


def _overlapping_copy(torch: Any) -> Any:
    a = torch.arange(5.0)
    a[1:].copy_(a[:-1])
    return a


def _int_inplace_float_result(op: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        t = torch.tensor([1, 2, 3])
        op(torch, t)
        return t
    return run


register(__name__, "copy___partially_overlapping", ("Tensor.copy_",), _overlapping_copy)
for _name, _op in {"div_": lambda torch, t: t.div_(2), "itruediv": lambda torch, t: t.__itruediv__(2),
                   "mul_float": lambda torch, t: t.mul_(1.5), "iadd_float": lambda torch, t: t.__iadd__(0.5),
                   "add_float_tensor": lambda torch, t: t.add_(torch.tensor([0.5, 0.5, 0.5])),
                   "div_trunc": lambda torch, t: t.div_(2, rounding_mode="trunc"),
                   "div_floor": lambda torch, t: t.div_(-2, rounding_mode="floor"),
                   "masked_fill_float_value": lambda torch, t: t.masked_fill_(t > 1, 2.7),
                   "fill_float": lambda torch, t: t.fill_(2.7),
                   "copy_float": lambda torch, t: t.copy_(torch.tensor([1.7, -2.7, 3.2]))}.items():
    _ops = {"itruediv": "Tensor.__itruediv__", "iadd_float": "Tensor.__iadd__", "mul_float": "Tensor.mul_",
            "add_float_tensor": "Tensor.add_", "div_trunc": "Tensor.div_", "div_floor": "Tensor.div_",
            "masked_fill_float_value": "Tensor.masked_fill_", "fill_float": "Tensor.fill_",
            "copy_float": "Tensor.copy_"}.get(_name, f"Tensor.{_name}")
    register(__name__, f"int64_{_name}", (_ops,), _int_inplace_float_result(_op))


def _bool_add(torch: Any) -> Any:
    t = torch.tensor([True, False, False])
    t.add_(torch.tensor([False, True, False]))
    return t


def _fill_one_element(torch: Any) -> Any:
    return torch.zeros(3).fill_(torch.tensor([1.0]))


def _int64_setitem_large(torch: Any) -> Any:
    flat = torch.zeros(4, dtype=torch.int64)
    flat[:1] = torch.tensor([2**40 + 5])
    flat[2] = 2**35 + 1
    return flat


def _float16_inplace(torch: Any) -> Any:
    t = tensor(torch, (2, 3), "float16")
    t.mul_(0.5).add_(1)
    t += 1
    return t


def _ior_iand_ixor(torch: Any) -> Any:
    a, b = tensor(torch, (4,), "bool", seed=1), tensor(torch, (4,), "bool", seed=2)
    base = torch.zeros(2, 4, dtype=torch.bool)
    view = base[1]
    view |= a
    c = a.clone()
    c &= b
    d = a.clone()
    d ^= b
    return {"base": base, "and": c, "xor": d}


register(__name__, "add___bool", ("Tensor.add_",), _bool_add)
register(__name__, "fill___one_element_1d_tensor_raises", ("Tensor.fill_",), _fill_one_element)
register(__name__, "setitem_int64_past_2_32", ("Tensor.__setitem__",), _int64_setitem_large)
register(__name__, "inplace_float16", ("Tensor.mul_", "Tensor.add_", "Tensor.__iadd__"), _float16_inplace)
register(__name__, "ior_iand_ixor_bool", ("Tensor.__ior__", "Tensor.__iand__", "Tensor.__ixor__"), _ior_iand_ixor)


def _grad_mul_(torch: Any) -> Any:
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = leaf * 2
    y.mul_(leaf)
    y.sum().backward()
    return leaf.grad


def _grad_zero_(torch: Any) -> Any:
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = leaf * 2
    y.zero_()
    y.sum().backward()
    return leaf.grad


def _grad_iadd_view(torch: Any) -> Any:
    leaf = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = leaf * 1.0
    y[0] += leaf[1] * 3
    (y * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    return {"y": y, "grad": leaf.grad}


def _grad_into_view_of_constant(torch: Any, form: str) -> Any:
    """A value that requires grad written in place into a view of a tensor that does not (a buffer): PyTorch makes
    the buffer record it; the gradient reaches the value through the buffer and through a second path."""
    leaf = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    buffer = torch.zeros(3, 3)
    if form == "add_":
        buffer[1].add_(leaf[0] * 2)
    elif form == "iadd":
        buffer[1:] += leaf
    elif form == "data_copy_":  # an alias outside autograd: the buffer does not record (megatron's optimizers)
        buffer[1].data.copy_(leaf[0] * 2)
    elif form == "detach_copy_":
        buffer[:, 1].detach().copy_(leaf[1])
    else:
        buffer[:, 0].copy_(leaf[1])
    loss = leaf.sum() + ((buffer * torch.arange(9.0).reshape(3, 3)).sum() if buffer.requires_grad else 0.0)
    loss.backward()
    return {"buffer": buffer.detach(), "grad": leaf.grad, "records": buffer.requires_grad}


def _leaf_inplace_raises(torch: Any) -> Any:
    leaf = torch.ones(3, requires_grad=True)
    leaf.add_(1)
    return leaf


def _grad_masked_fill_(torch: Any) -> Any:
    leaf = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = leaf * 2
    y.masked_fill_(y < 0, 0.0)
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    return {"y": y, "grad": leaf.grad}


register(__name__, "grad_through_mul_", ("Tensor.mul_",), _grad_mul_)
register(__name__, "grad_through_zero_", ("Tensor.zero_",), _grad_zero_)
register(__name__, "grad_through_iadd_on_view", ("Tensor.__iadd__", "Tensor.__setitem__"), _grad_iadd_view)
for _form in ("add_", "iadd", "copy_", "data_copy_", "detach_copy_"):
    register(__name__, f"grad_into_view_of_constant_{_form}", ("Tensor.add_", "Tensor.__iadd__", "Tensor.copy_"),
             lambda torch, _form=_form: _grad_into_view_of_constant(torch, _form))
register(__name__, "inplace_on_leaf_requiring_grad_raises", ("Tensor.add_",), _leaf_inplace_raises)
register(__name__, "grad_through_masked_fill_", ("Tensor.masked_fill_",), _grad_masked_fill_)


def _int64_inplace(apply: Callable[[Any, Any], Any], kind: str) -> Callable[[Any], Any]:
    shape, make_view = VIEWS[kind]

    def run(torch: Any) -> Any:
        base = torch.arange(12, dtype=torch.int64).view(shape) * (2**33 + 1)
        view = make_view(base)
        apply(torch, view)
        return {"view": view, "base": base}
    return run


INT64_INPLACE: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "iadd": ("Tensor.__iadd__", lambda torch, v: v.__iadd__(2**40)),
    "add_": ("Tensor.add_", lambda torch, v: v.add_(torch.full(tuple(v.shape), 2**41, dtype=torch.int64))),
    "copy_": ("Tensor.copy_", lambda torch, v: v.copy_(torch.full(tuple(v.shape), 2**45 + 3, dtype=torch.int64))),
    "fill_": ("Tensor.fill_", lambda torch, v: v.fill_(2**50 + 1)),
    "setitem": ("Tensor.__setitem__", lambda torch, v: v.__setitem__(Ellipsis, 2**36 + 5)),
    "imul": ("Tensor.__imul__", lambda torch, v: v.__imul__(3)),
}
for _name, (_op, _apply) in INT64_INPLACE.items():
    for _kind in ("owner", "slice", "transpose", "select"):
        register(__name__, f"int64_past_2_32_{_name}__{_kind}", (_op,), _int64_inplace(_apply, _kind))
