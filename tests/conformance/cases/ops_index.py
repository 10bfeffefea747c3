"""Indexing and scatter/gather: basic (int, negative, slice, step, None, Ellipsis), advanced (bool mask, int64
index tensor, list), assignment of scalars / tensors / broadcasts, and the index_* / scatter* / gather / where /
masked_fill ops (the out-of-place ones alias nothing; the in-place ones reach the base)."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import grad_of, register, tensor

GETITEM: dict[str, Callable[[Any, Any], Any]] = {
    "int": lambda torch, x: x[1], "negative": lambda torch, x: x[-1, -2], "slice": lambda torch, x: x[:, 1:3],
    "step": lambda torch, x: x[::2, 1::2], "none": lambda torch, x: x[None, :, None],
    "ellipsis": lambda torch, x: x[..., 0], "bool_mask": lambda torch, x: x[x > 0],
    "bool_row_mask": lambda torch, x: x[torch.tensor([True, False, True])],
    "index_tensor": lambda torch, x: x[torch.tensor([2, 0, 2])],
    "index_tensor_2d": lambda torch, x: x[torch.tensor([0, 2]), torch.tensor([1, 3])],
    "list": lambda torch, x: x[[0, 2]], "zero_dim_index": lambda torch, x: x[torch.tensor(1)],
    "mixed": lambda torch, x: x[1:, torch.tensor([0, 3])], "empty_slice": lambda torch, x: x[2:2],
    "out_of_range_raises": lambda torch, x: x[5], "int64_values": lambda torch, x: tensor(torch, (5,), "int64")[1:4],
}

SETITEM: dict[str, Callable[[Any, Any], None]] = {
    "int_scalar": lambda torch, x: x.__setitem__(1, 5.0),
    "slice_tensor": lambda torch, x: x.__setitem__((slice(None), slice(1, 3)), torch.ones(3, 2)),
    "slice_broadcast": lambda torch, x: x.__setitem__((slice(None), slice(0, 2)), torch.tensor([7.0, 8.0])),
    "bool_mask_scalar": lambda torch, x: x.__setitem__(x > 0, 0.0),
    "bool_mask_tensor": lambda torch, x: x.__setitem__(x < 0, torch.tensor(-5.0)),
    "index_tensor": lambda torch, x: x.__setitem__(torch.tensor([0, 2]), 3.0),
    "ellipsis_tensor": lambda torch, x: x.__setitem__(Ellipsis, torch.zeros(3, 4)),
    "step": lambda torch, x: x.__setitem__((slice(None, None, 2), 0), 9.0),
    "int_into_float": lambda torch, x: x.__setitem__((0, 0), 3),
    "float16_value": lambda torch, x: x.__setitem__(2, torch.ones(4, dtype=torch.float16)),
}

INDEX_OPS: dict[str, tuple[tuple[str, ...], Callable[[Any, Any], Any]]] = {
    "index_select": (("Tensor.index_select",), lambda torch, x: x.index_select(1, torch.tensor([3, 0]))),
    "index_select_fn": (("torch.index_select",), lambda torch, x: torch.index_select(x, 0, torch.tensor([2, 2]))),
    "gather": (("torch.gather",), lambda torch, x: torch.gather(x, 1, torch.tensor([[0, 1], [2, 3], [1, 1]]))),
    "gather_method": (("Tensor.gather",), lambda torch, x: x.gather(0, torch.tensor([[2, 1, 0, 0]]))),
    "scatter": (("Tensor.scatter",), lambda torch, x: x.scatter(1, torch.tensor([[0], [1], [2]]), 10.0)),
    "scatter_fn_src": (("torch.scatter",), lambda torch, x: torch.scatter(x, 0, torch.tensor([[2, 0, 1, 2]]),
                                                                          torch.ones(1, 4))),
    "scatter_add": (("Tensor.scatter_add",), lambda torch, x: x.scatter_add(0, torch.tensor([[0, 1, 0, 1]]),
                                                                            torch.ones(1, 4))),
    "where": (("torch.where",), lambda torch, x: torch.where(x > 0, x, torch.zeros_like(x))),
    "where_scalar": (("torch.where",), lambda torch, x: torch.where(x > 0, x, 0.0)),
    "where_single_arg": (("torch.where",), lambda torch, x: torch.where(x > 0)),
    "masked_fill": (("Tensor.masked_fill",), lambda torch, x: x.masked_fill(x > 0, -1.0)),
    "masked_fill_fn": (("torch.masked_fill",), lambda torch, x: torch.masked_fill(x, x < 0, torch.tensor(2.0))),
    "masked_fill_broadcast_mask": (("Tensor.masked_fill",),
                                   lambda torch, x: x.masked_fill(torch.tensor([True, False, False, True]), 0.0)),
    "index_put": (("Tensor.index_put",), lambda torch, x: x.index_put((torch.tensor([0, 2]),), torch.tensor(1.0))),
    "index_copy": (("Tensor.index_copy",), lambda torch, x: x.index_copy(0, torch.tensor([2, 0]), torch.ones(2, 4))),
    "diag": (("torch.diag",), lambda torch, x: [torch.diag(x), torch.diag(torch.tensor([1.0, 2.0]))]),
    "one_hot": (("torch.nn.functional.one_hot",),
                lambda torch, x: torch.nn.functional.one_hot(torch.tensor([0, 2, 1]), 4)),
}

INPLACE_INDEX: dict[str, tuple[tuple[str, ...], Callable[[Any, Any], Any]]] = {
    "scatter_": (("Tensor.scatter_",), lambda torch, v: v.scatter_(1, torch.tensor([[0], [1]]), 10.0)),
    "scatter_add_": (("Tensor.scatter_add_",), lambda torch, v: v.scatter_add_(0, torch.tensor([[1, 0]]),
                                                                               torch.ones(1, 2))),
    "index_add_": (("Tensor.index_add_",), lambda torch, v: v.index_add_(0, torch.tensor([1, 1]), torch.ones(2, 2))),
    "index_copy_": (("Tensor.index_copy_",), lambda torch, v: v.index_copy_(0, torch.tensor([1, 0]),
                                                                            torch.ones(2, 2))),
    "index_put_": (("Tensor.index_put_",), lambda torch, v: v.index_put_((torch.tensor([0]),), torch.tensor(3.0))),
    "index_put_accumulate": (("Tensor.index_put_",), lambda torch, v: v.index_put_(
        (torch.tensor([0, 0]),), torch.ones(2, 2), accumulate=True)),
}


def _make_get(name: str, get: Callable[[Any, Any], Any]) -> None:
    def run(torch: Any) -> Any:
        x = tensor(torch, (3, 4), seed=41)
        out = get(torch, x)
        return {"out": out}

    def grad(torch: Any) -> Any:
        return grad_of(torch, lambda x: get(torch, x), tensor(torch, (3, 4), seed=42))

    register(__name__, f"getitem_{name}", ("Tensor.__getitem__",), run)
    if name in ("int", "slice", "bool_mask", "index_tensor", "index_tensor_2d", "none"):
        register(__name__, f"getitem_{name}__grad", ("Tensor.__getitem__",), grad)


def _make_set(name: str, put: Callable[[Any, Any], None]) -> None:
    def run(torch: Any) -> Any:
        x = tensor(torch, (3, 4), seed=43)
        alias = x
        put(torch, x)
        return {"x": x, "alias": alias}

    register(__name__, f"setitem_{name}", ("Tensor.__setitem__",), run)


def _make_op(name: str, ops: tuple[str, ...], op: Callable[[Any, Any], Any]) -> None:
    def run(torch: Any) -> Any:
        x = tensor(torch, (3, 4), seed=44)
        out = op(torch, x)
        pieces = list(out) if isinstance(out, (list, tuple)) else [out]
        for piece in pieces:
            if piece.numel():
                piece.fill_(0)  # an out-of-place result aliases nothing
        return {"out": op(torch, x), "x_after_writing_out": x}

    register(__name__, name, ops, run)


def _make_inplace(name: str, ops: tuple[str, ...], op: Callable[[Any, Any], Any]) -> None:
    def run(torch: Any) -> Any:
        base = tensor(torch, (3, 4), seed=45)
        view = base[1:, 1:3]
        returned = op(torch, view)
        return {"view": view, "base": base, "returns_self": returned is view}

    def run_owner(torch: Any) -> Any:
        x = tensor(torch, (2, 2), seed=46)
        returned = op(torch, x)
        return {"x": x, "returns_self": returned is x}

    register(__name__, f"{name}__slice_view", ops, run)
    register(__name__, f"{name}__owner", ops, run_owner)


for _name, _get in GETITEM.items():
    _make_get(_name, _get)
for _name, _put in SETITEM.items():
    _make_set(_name, _put)
for _name, (_ops, _op) in INDEX_OPS.items():
    _make_op(_name, _ops, _op)
for _name, (_ops, _op) in INPLACE_INDEX.items():
    _make_inplace(_name, _ops, _op)


def _index_add_int64_then_grad(torch: Any) -> Any:
    t = torch.zeros(3, dtype=torch.int64)
    t.index_add_(0, torch.tensor([0, 2]), torch.tensor([5, 6]))
    return t


def _gather_grad(torch: Any) -> Any:
    return grad_of(torch, lambda x: torch.gather(x, 1, torch.tensor([[0, 0], [1, 3], [2, 2]])),
                   tensor(torch, (3, 4), seed=47))


def _where_grad(torch: Any) -> Any:
    a, b = tensor(torch, (3, 4), seed=48), tensor(torch, (3, 4), seed=49)
    return grad_of(torch, lambda x, y: torch.where(x > y, x, y), a, b)


register(__name__, "index_add__int64", ("Tensor.index_add_",), _index_add_int64_then_grad)
register(__name__, "gather__grad", ("torch.gather",), _gather_grad)
register(__name__, "where__grad", ("torch.where",), _where_grad)


def _getitem_aliasing(get: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        x = tensor(torch, (3, 4), seed=50)
        out = get(torch, x)
        before = out.clone()
        x.add_(10.0)  # basic indexing gives a view (sees this); advanced indexing a copy (does not)
        seen = out.clone()
        out.fill_(-1.0)  # and a view's write reaches x
        return {"before": before, "after_input_write": seen, "input_after_write": x}
    return run


for _name in ("int", "slice", "step", "none", "ellipsis", "bool_mask", "index_tensor", "list", "mixed"):
    register(__name__, f"getitem_{_name}__aliasing", ("Tensor.__getitem__",), _getitem_aliasing(GETITEM[_name]))
