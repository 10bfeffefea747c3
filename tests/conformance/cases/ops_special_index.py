"""Indexing at the edges: negative indices, an index equal to the size (IndexError in PyTorch, or RuntimeError for
gather/scatter), empty index tensors, all-False masks, repeated indices (gather/index_select copy them, index_add_,
index_put_(accumulate=True) and scatter_add sum them; scatter_/index_copy_ with repeats are nondeterministic in
PyTorch and left out), embedding with padding_idx. Values are copies, so everything compares bit for bit."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register, tensor


def _x(torch: Any) -> Any:
    return tensor(torch, (3, 4), seed=61)


def _long(torch: Any, values: list[int]) -> Any:
    return torch.tensor(values, dtype=torch.int64)


def _setitem(torch: Any, key: Callable[[Any], Any], value: Any) -> Any:
    x = _x(torch)
    x[key(torch)] = value
    return x


def _inplace(torch: Any, op: Callable[[Any], Any]) -> Any:
    x = _x(torch)
    returned = op(x)
    return {"x": x, "returns_self": returned is x}


def _embedding_grad(torch: Any, padding_idx: int) -> Any:
    weight = tensor(torch, (5, 3), seed=62).requires_grad_(True)
    ids = _long(torch, [[0, 2, 4], [4, 4, 1]])
    out = torch.nn.functional.embedding(ids, weight, padding_idx=padding_idx)
    (out * tensor(torch, (2, 3, 3), seed=63)).sum().backward()
    return {"out": out, "grad": weight.grad}


def _embedding_module(torch: Any) -> Any:
    module = torch.nn.Embedding(5, 3, padding_idx=1)
    return {"padding_row": module.weight[1], "others_nonzero": bool((module.weight[0] != 0).any()),
            "out": module(_long(torch, [1, 1]))}


def _uint8_masks(torch: Any) -> Any:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = _x(torch)[torch.tensor([1, 0, 1], dtype=torch.uint8)]
        columns = _x(torch)[:, torch.tensor([0, 1, 1, 0], dtype=torch.uint8)]
    return {"rows": rows, "columns": columns,
            "warned": any("torch.uint8 is now deprecated" in str(warning.message) for warning in caught)}


# name -> (ops, case(torch))
INDEX_CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "getitem_negative": (("Tensor.__getitem__",), lambda torch: {
        "int": _x(torch)[-1], "pair": _x(torch)[-3, -4], "column": _x(torch)[:, -1],
        "tensor": _x(torch)[_long(torch, [-1, -3, 0])], "list": _x(torch)[[-1, -1]],
        "tensor_2d": _x(torch)[_long(torch, [-1, 0]), _long(torch, [-4, 3])]}),
    "getitem_int_equal_to_size_raises": (("Tensor.__getitem__",), lambda torch: _x(torch)[3]),
    "getitem_column_equal_to_size_raises": (("Tensor.__getitem__",), lambda torch: _x(torch)[:, 4]),
    "getitem_negative_past_size_raises": (("Tensor.__getitem__",), lambda torch: _x(torch)[-4]),
    "getitem_tensor_equal_to_size_raises": (("Tensor.__getitem__",), lambda torch: _x(torch)[_long(torch, [0, 3])]),
    "getitem_tensor_negative_past_size_raises": (("Tensor.__getitem__",),
                                                 lambda torch: _x(torch)[_long(torch, [-4])]),
    "getitem_empty_index": (("Tensor.__getitem__",), lambda torch: {
        "tensor": _x(torch)[_long(torch, [])], "column": _x(torch)[:, _long(torch, [])],
        "slice": _x(torch)[3:], "negative_slice": _x(torch)[-1:-1]}),
    "getitem_all_false_mask": (("Tensor.__getitem__",), lambda torch: {
        "full": _x(torch)[torch.zeros(3, 4, dtype=torch.bool)], "rows": _x(torch)[torch.zeros(3, dtype=torch.bool)],
        "compare": _x(torch)[_x(torch) > 10]}),
    "getitem_repeated": (("Tensor.__getitem__",), lambda torch: {
        "rows": _x(torch)[_long(torch, [2, 2, 0, 2])], "pairs": _x(torch)[_long(torch, [1, 1]), _long(torch, [0, 0])]}),
    "getitem_empty_list": (("Tensor.__getitem__",), lambda torch: {
        "alone": _x(torch)[[]], "column": _x(torch)[:, []], "then_int": _x(torch)[[], 1]}),
    "getitem_uint8_mask": (("Tensor.__getitem__",), lambda torch: _uint8_masks(torch)),
    "getitem_scalar_bool": (("Tensor.__getitem__",), lambda torch: {
        "false": _x(torch)[False], "true": _x(torch)[True], "false_last": _x(torch)[..., False],
        "false_between": _x(torch)[0, False, 1:3], "none_then_false": _x(torch)[None, :, False],
        "tensor_false": _x(torch)[torch.tensor(False)], "tensor_true": _x(torch)[torch.tensor(True)],
        "tensor_false_none": _x(torch)[torch.tensor(False), None],
        "tensor_false_last": _x(torch)[..., torch.tensor(False)]}),
    # PyTorch reads scalar booleans as index tensors on new dimensions, broadcast with the other index tensors
    "getitem_scalar_bools_advanced": (("Tensor.__getitem__",), lambda torch: {
        "true_then_false": _x(torch)[True, :, False], "true_and_tensor": _x(torch)[True, _long(torch, [0, 2])],
        "tensor_then_true": _x(torch)[_long(torch, [2, 0]), ..., torch.tensor(True)],
        "mask_and_true": _x(torch)[_x(torch) > 0, True], "true_true": _x(torch)[True, True, 1]}),
    "getitem_scalar_bool_and_tensor_raises": (("Tensor.__getitem__",),
                                              lambda torch: _x(torch)[False, _long(torch, [0, 2])]),
    "getitem_tensors_not_broadcasting_raises": (("Tensor.__getitem__",),
                                                lambda torch: _x(torch)[_long(torch, [1, 2, 0]), _long(torch, [0, 2])]),
    "setitem_negative": (("Tensor.__setitem__",), lambda torch: {
        "int": _setitem(torch, lambda t: -1, 7.0), "tensor": _setitem(torch, lambda t: _long(t, [-1, -3]), 5.0)}),
    "setitem_equal_to_size_raises": (("Tensor.__setitem__",), lambda torch: _setitem(torch, lambda t: 3, 1.0)),
    "setitem_tensor_equal_to_size_raises": (("Tensor.__setitem__",),
                                            lambda torch: _setitem(torch, lambda t: _long(t, [3]), 1.0)),
    "setitem_empty_and_all_false": (("Tensor.__setitem__",), lambda torch: {
        "empty": _setitem(torch, lambda t: _long(t, []), 9.0),
        "mask": _setitem(torch, lambda t: t.zeros(3, 4, dtype=t.bool), 9.0),
        "row_mask": _setitem(torch, lambda t: t.zeros(3, dtype=t.bool), 9.0)}),
    "setitem_repeated_same_value": (("Tensor.__setitem__",),
                                    lambda torch: _setitem(torch, lambda t: _long(t, [1, 1, 2]), 4.0)),
    "index_select_edges": (("Tensor.index_select", "torch.index_select"), lambda torch: {
        "repeated": _x(torch).index_select(0, _long(torch, [2, 2, 0])),
        "empty": torch.index_select(_x(torch), 1, _long(torch, [])),
        "int32": _x(torch).index_select(1, torch.tensor([3, 0], dtype=torch.int32))}),
    "index_select_equal_to_size_raises": (("Tensor.index_select",),
                                          lambda torch: _x(torch).index_select(0, _long(torch, [3]))),
    "index_select_negative_raises": (("torch.index_select",),
                                     lambda torch: torch.index_select(_x(torch), 0, _long(torch, [-1]))),
    "gather_edges": (("torch.gather", "Tensor.gather"), lambda torch: {
        "repeated": torch.gather(_x(torch), 1, _long(torch, [[0, 0, 0], [3, 3, 1], [2, 2, 2]])),
        "empty": _x(torch).gather(1, torch.zeros(3, 0, dtype=torch.int64)),
        "fewer_rows": torch.gather(_x(torch), 0, _long(torch, [[2, 2, 2, 2]]))}),
    "gather_equal_to_size_raises": (("torch.gather",),
                                    lambda torch: torch.gather(_x(torch), 1, _long(torch, [[4], [0], [0]]))),
    "gather_negative_raises": (("Tensor.gather",), lambda torch: _x(torch).gather(1, _long(torch, [[-1], [0], [0]]))),
    "scatter_equal_to_size_raises": (("Tensor.scatter",),
                                     lambda torch: _x(torch).scatter(1, _long(torch, [[4], [0], [0]]), 1.0)),
    "scatter_add_repeated": (("Tensor.scatter_add", "Tensor.scatter_add_"), lambda torch: {
        "out": _x(torch).scatter_add(1, _long(torch, [[0, 0, 0], [1, 1, 3], [2, 2, 2]]), torch.ones(3, 3)),
        "inplace": _inplace(torch, lambda x: x.scatter_add_(0, _long(torch, [[1, 1, 1, 1], [1, 0, 1, 0]]),
                                                             torch.full((2, 4), 2.0)))}),
    "index_add_repeated": (("Tensor.index_add_",), lambda torch: {
        "rows": _inplace(torch, lambda x: x.index_add_(0, _long(torch, [1, 1, 1, 2]), torch.ones(4, 4))),
        "alpha": _inplace(torch, lambda x: x.index_add_(1, _long(torch, [0, 0]), torch.ones(3, 2), alpha=2)),
        "empty": _inplace(torch, lambda x: x.index_add_(0, _long(torch, []), torch.ones(0, 4))),
        "negative": _inplace(torch, lambda x: x.index_add_(0, _long(torch, [-1]), torch.ones(1, 4)))}),
    "index_add_equal_to_size_raises": (("Tensor.index_add_",),
                                       lambda torch: _x(torch).index_add_(0, _long(torch, [3]), torch.ones(1, 4))),
    "index_put_accumulate_repeated": (("Tensor.index_put_",), lambda torch: {
        "rows": _inplace(torch, lambda x: x.index_put_((_long(torch, [0, 0, 2]),), torch.ones(3, 4),
                                                       accumulate=True)),
        "points": _inplace(torch, lambda x: x.index_put_((_long(torch, [1, 1]), _long(torch, [-1, 3])),
                                                         torch.tensor([1.0, 2.0]), accumulate=True))}),
    "index_copy_edges": (("Tensor.index_copy_", "Tensor.index_copy"), lambda torch: {
        "negative_free": _x(torch).index_copy(0, _long(torch, [2, 0]), torch.ones(2, 4)),
        "empty": _inplace(torch, lambda x: x.index_copy_(1, _long(torch, []), torch.ones(3, 0)))}),
    "masked_fill_all_false": (("Tensor.masked_fill", "Tensor.masked_fill_", "torch.masked_fill"), lambda torch: {
        "out": _x(torch).masked_fill(torch.zeros(3, 4, dtype=torch.bool), 1.0),
        "inplace": _inplace(torch, lambda x: x.masked_fill_(torch.zeros(4, dtype=torch.bool), 1.0)),
        "fn_all_true": torch.masked_fill(_x(torch), torch.ones(3, 1, dtype=torch.bool), -0.0)}),
    "where_all_false": (("torch.where",), lambda torch: {
        "single": torch.where(torch.zeros(3, dtype=torch.bool)), "select": torch.where(
            torch.zeros(3, 4, dtype=torch.bool), _x(torch), -0.0)}),
    "nonzero_none": (("torch.nonzero", "Tensor.nonzero"), lambda torch: {
        "fn": torch.nonzero(torch.zeros(2, 3)), "tuple": torch.zeros(2, 3).nonzero(as_tuple=True)}),
    "embedding_padding_idx_grad": (("torch.nn.functional.embedding",), lambda torch: _embedding_grad(torch, 4)),
    "embedding_negative_padding_idx_grad": (("torch.nn.functional.embedding",),
                                            lambda torch: _embedding_grad(torch, -1)),
    "embedding_module_padding_row": (("torch.nn.Embedding",), _embedding_module),
    "embedding_index_equal_to_size_raises": (("torch.nn.functional.embedding",), lambda torch: (
        torch.nn.functional.embedding(_long(torch, [5]), tensor(torch, (5, 3))))),
    "embedding_negative_index_raises": (("torch.nn.functional.embedding",), lambda torch: (
        torch.nn.functional.embedding(_long(torch, [-1]), tensor(torch, (5, 3))))),
}

for _name, (_ops, _run) in INDEX_CASES.items():
    register(__name__, _name, _ops, _run, exact=True)
