"""Integer and bool results stay outside autograd: comparisons, logical/bitwise ops, isnan and friends, casts to
integer or bool, argmax/nonzero/searchsorted and the other index producers, of a float tensor that requires grad
(PyTorch: ``requires_grad`` False, ``grad_fn`` None, ``is_leaf`` True; only floating and complex tensors can require
grad). In-place writes by such masks and indices into float tensors record nothing of them: a buffer's view takes
them, a leaf without grad stays one, and a non-leaf's gradient is PyTorch's."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register, tensor


def _meta(value: Any) -> Any:
    return {"dtype": value.dtype, "requires_grad": value.requires_grad, "grad_fn": value.grad_fn is None,
            "is_leaf": value.is_leaf}


def _source(torch: Any) -> tuple[Any, Any]:
    x = tensor(torch, (4, 3), requires_grad=True)
    return x, x * 2


def _metadata(ops: Callable[[Any, Any, Any], dict[str, Any]]) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        x, y = _source(torch)
        return {name: _meta(value) for name, value in ops(torch, x, y).items()}

    return run


def _comparisons(torch: Any, x: Any, y: Any) -> dict[str, Any]:
    return {"gt": y > 0, "lt": y < 0, "ge": y >= 0, "le": y <= x, "eq": y == y, "ne": y != x,
            "torch.gt": torch.gt(y, 0), "torch.eq": torch.eq(y, x), "Tensor.lt": y.lt(0), "Tensor.ne": y.ne(0),
            "leaf_gt": x > 0, "torch.ge": torch.ge(x, y), "Tensor.le": y.le(x)}


def _logical_bitwise(torch: Any, x: Any, y: Any) -> dict[str, Any]:
    ints = y.long()
    return {"logical_and": torch.logical_and(y, x), "logical_or": torch.logical_or(y, 0.0 * y),
            "logical_xor": y.logical_xor(x), "logical_not": torch.logical_not(y), "and": (y > 0) & (x < 1),
            "or": (y > 0) | (x < 1), "xor": (y > 0) ^ (x < 1), "invert": ~(y > 0),
            "bitwise_and": torch.bitwise_and(ints, 1), "bitwise_or": ints | 3}


def _special_values(torch: Any, x: Any, y: Any) -> dict[str, Any]:
    return {"isnan": torch.isnan(y), "isinf": torch.isinf(y), "isfinite": torch.isfinite(y),
            "Tensor.isnan": y.isnan(), "Tensor.isneginf": y.isneginf()}


def _casts(torch: Any, x: Any, y: Any) -> dict[str, Any]:
    return {"long": y.long(), "int": y.int(), "bool": y.bool(), "to_int32": y.to(torch.int32),
            "to_dtype": y.to(dtype=torch.int64), "to_bool": y.to(torch.bool), "type": y.type(torch.int64),
            "leaf_long": x.long(), "short": y.short(), "byte": (y > 0).byte(), "to_uint8": y.to(torch.uint8)}


def _back_to_float(torch: Any, x: Any, y: Any) -> dict[str, Any]:
    return {"int_float": y.int().float(), "long_half": y.long().half(), "mask_float": (y > 0).float(),
            "mask_to": (y > 0).to(torch.float32), "argmax_float": y.argmax(1).float(),
            "float_of_float": y.float(), "double": y.double()}


def _index_producers(torch: Any, x: Any, y: Any) -> dict[str, Any]:
    edges = torch.tensor([-1.0, 0.0, 1.0])
    return {"argmax": y.argmax(1), "argmin": torch.argmin(y, 0), "argmax_all": y.argmax(),
            "argsort": y.argsort(1), "searchsorted": torch.searchsorted(edges, y.detach() * 0 + y),
            "nonzero": y.nonzero(), "torch.nonzero": torch.nonzero(y > 0), "where_cond": torch.where(y > 0)[0],
            "unique_of_int": torch.unique(y.long()), "unique_inverse": torch.unique(y, return_inverse=True)[1],
            "bincount": torch.bincount((y.abs() * 2).long().flatten()), "count_nonzero": torch.count_nonzero(y),
            "all": y.all(), "torch.all": torch.all(y, 1), "any": y.any()}


def _float_from_mask(torch: Any) -> Any:
    """``torch.where(mask, a, b)`` of tensors without grad and a mask from a tensor that requires grad: no grad."""
    _, y = _source(torch)
    mask = y > 0
    picked = torch.where(mask, torch.ones(4, 3), torch.zeros(4, 3))
    return {"picked": picked, "meta": _meta(picked), "sum": _meta(mask.float().sum())}


def _like_factories(torch: Any) -> Any:
    """``zeros_like``/``ones_like``/``empty_like`` of a tensor that requires grad: new leaves without grad (MindSpore
    recorded them as computed from it), unless ``requires_grad=True`` asks (a leaf that requires grad)."""
    x, y = _source(torch)
    made = {"zeros": torch.zeros_like(y), "ones": torch.ones_like(x), "empty": torch.empty_like(y),
            "zeros_int": torch.zeros_like(y, dtype=torch.int64), "ones_half": torch.ones_like(y, dtype=torch.float16),
            "asked": torch.zeros_like(y, requires_grad=True), "full": torch.full_like(y, 2.0)}
    values = {name: made[name] for name in ("zeros", "ones", "zeros_int", "ones_half", "asked", "full")}
    try:
        torch.zeros_like(y, dtype=torch.int64, requires_grad=True)
        refused: Any = "accepted"
    except RuntimeError as error:
        refused = "floating point" in str(error)
    return {"meta": {name: _meta(value) for name, value in made.items()}, "values": values, "int_refused": refused}


def _int_requires_grad_(torch: Any) -> Any:
    outcome = {}
    for name, make in (("int64", lambda: torch.tensor([1, 2]).requires_grad_()),
                       ("bool", lambda: torch.tensor([True]).requires_grad_()),
                       ("setter", lambda: setattr(torch.tensor([1, 2]), "requires_grad", True)),
                       ("factory", lambda: torch.tensor([1, 2], dtype=torch.int64, requires_grad=True)),
                       ("zeros", lambda: torch.zeros(2, dtype=torch.int32, requires_grad=True))):
        try:
            make()
            outcome[name] = "accepted"
        except RuntimeError as error:
            outcome[name] = "floating point" in str(error)
    return outcome


def _int_requires_grad_false(torch: Any) -> Any:
    """Switching it off (or asking for False) is fine on any dtype."""
    t = torch.tensor([1, 2]).requires_grad_(False)
    u = torch.tensor([1, 2], requires_grad=False)
    return {"t": _meta(t), "u": _meta(u)}


# ---- in-place writes by masks and indices from a tensor that requires grad ----------------------------------


def _mask_and_index(torch: Any) -> tuple[Any, Any, Any, Any]:
    x, y = _source(torch)
    return x, y, y > 0, y.argmax(1)


def _masked_fill_leaf(torch: Any) -> Any:
    _, _, mask, _ = _mask_and_index(torch)
    t = torch.zeros(4, 3)
    t.masked_fill_(mask, 1.5)
    return {"t": t, "meta": _meta(t)}


def _setitem_by_mask(torch: Any) -> Any:
    _, _, mask, index = _mask_and_index(torch)
    t = torch.zeros(4, 3)
    t[mask] = 2.0
    u = torch.zeros(4, 3)
    u[torch.arange(4), index] = 3.0
    return {"t": t, "meta": _meta(t), "u": u, "u_meta": _meta(u)}


def _scatter_index_add(torch: Any) -> Any:
    _, _, _, index = _mask_and_index(torch)
    t = torch.zeros(4, 3)
    t.scatter_(1, index.unsqueeze(1), torch.ones(4, 1))
    u = torch.zeros(3, 2)
    u.index_add_(0, index, torch.ones(4, 2))
    w = torch.zeros(4, 3)
    w.index_put_((torch.arange(4), index), torch.full((4,), 5.0))
    return {"t": t, "t_meta": _meta(t), "u": u, "u_meta": _meta(u), "w": w, "w_meta": _meta(w)}


def _writes_into_buffer_views(torch: Any) -> Any:
    _, _, mask, index = _mask_and_index(torch)
    buffer = torch.zeros(6, 3)
    buffer[1:5].masked_fill_(mask, 1.0)
    buffer[2:6].scatter_(1, index.unsqueeze(1), torch.full((4, 1), 7.0))
    buffer[0:4].index_add_(0, index.clamp(max=3), torch.ones(4, 3))
    flat = torch.zeros(12)
    flat.view(4, 3).masked_fill_(mask, -1.0)
    return {"buffer": buffer, "meta": _meta(buffer), "flat": flat, "flat_meta": _meta(flat)}


def _writes_into_non_leaf(torch: Any) -> Any:
    """A non-leaf that requires grad, written by mask and index: its gradient is PyTorch's (zero where written)."""
    x, y, mask, index = _mask_and_index(torch)
    z = x * 3
    z.masked_fill_(mask, 0.0)
    z.scatter_(1, index.unsqueeze(1), torch.zeros(4, 1))
    (z * torch.arange(12.0).view(4, 3)).sum().backward()
    return {"z": z, "meta": _meta(z), "grad": x.grad}


register(__name__, "comparisons_outside_autograd",
         ("Tensor.__gt__", "Tensor.__lt__", "Tensor.__ge__", "Tensor.__le__", "Tensor.__eq__", "Tensor.__ne__",
          "torch.gt", "torch.eq", "torch.ge", "Tensor.lt", "Tensor.ne", "Tensor.le", "Tensor.requires_grad",
          "Tensor.grad_fn", "Tensor.is_leaf"), _metadata(_comparisons))
register(__name__, "logical_bitwise_outside_autograd",
         ("torch.logical_and", "torch.logical_or", "Tensor.logical_xor", "torch.logical_not", "Tensor.__and__",
          "Tensor.__or__", "Tensor.__xor__", "Tensor.__invert__", "torch.bitwise_and"),
         _metadata(_logical_bitwise))
register(__name__, "special_values_outside_autograd",
         ("torch.isnan", "torch.isinf", "torch.isfinite", "Tensor.isnan", "Tensor.isneginf"),
         _metadata(_special_values))
register(__name__, "integer_casts_outside_autograd",
         ("Tensor.long", "Tensor.int", "Tensor.bool", "Tensor.to", "Tensor.type", "Tensor.short", "Tensor.byte"),
         _metadata(_casts))
register(__name__, "float_again_outside_autograd",
         ("Tensor.float", "Tensor.half", "Tensor.to", "Tensor.double"), _metadata(_back_to_float))
register(__name__, "index_producers_outside_autograd",
         ("torch.argmax", "Tensor.argmax", "torch.argmin", "Tensor.argsort", "torch.searchsorted", "Tensor.nonzero",
          "torch.nonzero", "torch.where", "torch.unique", "torch.bincount", "torch.count_nonzero", "Tensor.all",
          "torch.all", "Tensor.any"),
         _metadata(_index_producers))
register(__name__, "float_from_mask_outside_autograd", ("torch.where", "Tensor.float", "Tensor.sum"),
         _float_from_mask)
register(__name__, "like_factories_are_new_leaves", ("torch.zeros_like", "torch.ones_like", "torch.empty_like",
                                                     "torch.full_like"), _like_factories)
register(__name__, "integer_requires_grad_refused", ("Tensor.requires_grad_", "torch.tensor", "torch.zeros"),
         _int_requires_grad_)
register(__name__, "integer_requires_grad_false", ("Tensor.requires_grad_", "torch.tensor"),
         _int_requires_grad_false)
register(__name__, "masked_fill_by_mask_leaf", ("Tensor.masked_fill_",), _masked_fill_leaf)
register(__name__, "setitem_by_mask_and_index", ("Tensor.__setitem__",), _setitem_by_mask)
register(__name__, "scatter_index_add_index_put_by_index",
         ("Tensor.scatter_", "Tensor.index_add_", "Tensor.index_put_"), _scatter_index_add)
register(__name__, "writes_by_mask_into_buffer_views",
         ("Tensor.masked_fill_", "Tensor.scatter_", "Tensor.index_add_"), _writes_into_buffer_views)
register(__name__, "writes_by_mask_into_non_leaf", ("Tensor.masked_fill_", "Tensor.scatter_"), _writes_into_non_leaf)


def _dtype_identities(torch: Any) -> Any:
    """The dtype aliases megatron compares with ``==``/``in``/dict lookups, and the float/int split it tests."""
    x = tensor(torch, (2,))
    pairs = {"float": (torch.float32, torch.float), "half": (torch.float16, torch.half),
             "double": (torch.float64, torch.double), "long": (torch.int64, torch.long),
             "int": (torch.int32, torch.int), "short": (torch.int16, torch.short)}
    lookup = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
    halves = (torch.float16, torch.bfloat16)
    kinds = (torch.float32, torch.bfloat16, torch.int64, torch.bool)
    return {"aliases": {name: a == b for name, (a, b) in pairs.items()},
            "distinct": [torch.bfloat16 == torch.float16, torch.float32 == torch.float64, torch.int32 == torch.int64],
            "lookup": [lookup[x.dtype], lookup[x.half().dtype], lookup[x.bfloat16().dtype]],
            "member": [x.dtype in halves, x.bfloat16().dtype in halves],
            "is_floating_point": [d.is_floating_point for d in kinds],
            "itemsize": [d.itemsize for d in (torch.float32, torch.bfloat16, torch.int8, torch.int64)],
            "x_is_float": x.dtype == torch.float, "long_of_x": x.long().dtype == torch.long}


register(__name__, "dtype_aliases_and_lookups", ("torch.dtype",), _dtype_identities)
