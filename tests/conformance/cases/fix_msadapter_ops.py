"""Ops whose MSAdapter CPU semantics differ from PyTorch's, fixed by the built-in providers: reductions, indices,
counts, index_add, embedding, int64 slice assignment, norms."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("torch.norm", "Tensor.norm")
def norm_of_matrix_without_dim_flattens(torch: Any) -> Any:
    a = torch.tensor([[3.0, 4.0], [1.0, 2.0]])
    m = torch.tensor(data((3, 4), seed=21))
    return {"p2": torch.norm(a, p=2), "method_p2": a.norm(p=2), "fro": torch.norm(a), "p1": torch.norm(m, p=1),
            "inf": torch.norm(m, p=float("inf")), "p3": torch.norm(m, p=3), "p0": torch.norm(m, p=0),
            "keepdim": torch.norm(m, p=2, keepdim=True), "positional": torch.norm(m, 2, None),
            "dim": torch.norm(m, p=2, dim=1), "vector": torch.norm(torch.tensor([3.0, 4.0]))}


@case("torch.std", "Tensor.std", "torch.var", "Tensor.var")
def std_and_var_are_bessel_corrected(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=22))
    return {"std_dim": x.std(dim=1), "std_all": x.std(), "std_fn": torch.std(x, dim=0),
            "std_keepdim": x.std(1, keepdim=True), "std_biased": x.std(dim=1, unbiased=False),
            "std_correction0": torch.std(x, correction=0), "std_bool_overload": x.std(False),
            "std_positional": torch.std(x, 0, True, True), "std_dims": x.std(dim=(0, 1)),
            "var_dim": x.var(dim=1), "var_all": x.var(), "var_fn": torch.var(x, dim=0),
            "var_neg_dim": x.var(-1, keepdim=True), "var_correction2": torch.var(x, dim=1, correction=2)}


@case("Tensor.std")
def std_of_integer_tensor_raises(torch: Any) -> Any:
    return torch.tensor([1, 2, 3]).std()


@case("Tensor.std", "Tensor.var")
def std_gradient(torch: Any) -> Any:
    x = torch.tensor(data((2, 5), seed=23), requires_grad=True)
    (x.std(dim=1).sum() + x.var()).backward()
    return x.grad


@case("torch.topk", "Tensor.topk", "torch.sort", "Tensor.sort", "torch.argsort", "Tensor.argsort", "torch.max",
      "Tensor.max", "torch.min", "Tensor.min", "torch.argmax", "Tensor.argmax")
def index_results_are_int64_with_named_fields(torch: Any) -> Any:
    x = torch.tensor(data((3, 5), seed=24))
    top = torch.topk(x, 2)
    srt = torch.sort(x, 1, descending=True)
    mx = x.max(dim=1)
    mn = torch.min(x, 0)
    values, indices = x.topk(3, dim=0)
    return {"topk": (top.values, top.indices), "topk_method": (values, indices),
            "sort": (srt.values, srt.indices), "sort_method": tuple(x.sort(dim=0)),
            "argsort": torch.argsort(x, dim=1), "argsort_method": x.argsort(descending=True),
            "max": (mx.values, mx.indices, mx[0], mx[1]), "min": (mn.values, mn.indices),
            "min_method": tuple(x.min(1)), "max_all": torch.max(x), "max_other": torch.max(x, torch.zeros(3, 5)),
            "argmax": torch.argmax(x, dim=1), "argmin": x.argmin()}


@case("torch.topk")
def topk_values_gradient(torch: Any) -> Any:
    x = torch.tensor(data((2, 6), seed=25), requires_grad=True)
    torch.topk(x, 3).values.sum().backward()
    return x.grad


@case("torch.bincount")
def bincount_dtypes(torch: Any) -> Any:
    x = torch.tensor([0, 1, 1, 3, 1])
    return {"counts": torch.bincount(x), "minlength": torch.bincount(x, minlength=7),
            "float_weights": torch.bincount(x, weights=torch.tensor([0.5, 1.0, 2.0, 0.25, 1.5])),
            "double_weights": torch.bincount(x, weights=torch.tensor([1, 2, 3, 4, 5])),
            "empty": torch.bincount(torch.tensor([], dtype=torch.int64))}


@case("torch.index_add", "Tensor.index_add", "Tensor.index_add_")
def index_add_with_int64_indices(torch: Any) -> Any:
    x = torch.tensor(data((4, 3), seed=26))
    src = torch.tensor(data((2, 3), seed=27))
    cols = torch.tensor(data((4, 2), seed=28))
    inplace = x.clone()
    inplace.index_add_(0, torch.tensor([1, 1]), src)
    base = torch.zeros(6, 3)
    view = base[1:5]
    view.index_add_(0, torch.tensor([0, 3]), src, alpha=2)
    return {"fn": torch.index_add(x, 0, torch.tensor([3, 0]), src), "alpha": x.index_add(0, torch.tensor([2, 2]),
                                                                                        src, alpha=-0.5),
            "dim1": x.index_add(1, torch.tensor([0, 2]), cols), "int32": x.index_add(0, torch.tensor(
                [1, 0], dtype=torch.int32), src), "inplace": inplace, "view_base": base}


@case("torch.index_add")
def index_add_gradient(torch: Any) -> Any:
    x = torch.tensor(data((4, 3), seed=29), requires_grad=True)
    src = torch.tensor(data((2, 3), seed=30), requires_grad=True)
    (torch.index_add(x, 0, torch.tensor([1, 1]), src, alpha=3) ** 2).sum().backward()
    return {"x": x.grad, "src": src.grad}


@case("torch.index_add")
def index_add_with_out_of_range_index_raises(torch: Any) -> Any:
    return torch.index_add(torch.zeros(3), 0, torch.tensor([0, 5]), torch.ones(2))


@case("torch.nn.functional.embedding", "torch.nn.Embedding")
def embedding_padding_row_gets_no_gradient(torch: Any) -> Any:
    weight = torch.tensor(data((5, 3), seed=31), requires_grad=True)
    ids = torch.tensor([[0, 2, 2], [4, 1, 2]])
    out = torch.nn.functional.embedding(ids, weight, padding_idx=2)
    (out * torch.tensor(data((2, 3, 3), seed=32))).sum().backward()
    module = torch.nn.Embedding(5, 3, padding_idx=-1)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(data((5, 3), seed=33)))
    module(ids).sum().backward()
    return {"out": out, "grad": weight.grad, "module_grad": module.weight.grad,
            "no_padding": torch.nn.functional.embedding(ids, weight)}


@case("torch.nn.functional.embedding")
def embedding_of_int64_and_int32_ids_sums_repeated_rows_gradients(torch: Any) -> Any:
    weight = torch.tensor(data((6, 4), seed=34), requires_grad=True)
    ids = torch.tensor([[5, 0, 5], [3, 5, 0]])  # int64, as megatron's tokens and position ids
    transposed = torch.tensor([[1, 2], [3, 4], [0, 5]]).t()  # a strided view of int64 ids
    out = torch.nn.functional.embedding(ids, weight)
    (out * torch.tensor(data((2, 3, 4), seed=35))).sum().backward()
    return {"out": out, "grad": weight.grad, "int32": torch.nn.functional.embedding(ids.int(), weight),
            "strided": torch.nn.functional.embedding(transposed, weight),
            "empty": torch.nn.functional.embedding(torch.tensor([], dtype=torch.int64), weight)}


@case("torch.nn.functional.embedding")
def embedding_with_a_negative_id_raises(torch: Any) -> Any:
    return torch.nn.functional.embedding(torch.tensor([[1, -1]]), torch.tensor(data((6, 4), seed=36)))


@case("torch.nn.functional.embedding")
def embedding_with_an_id_past_int32_raises(torch: Any) -> Any:
    return torch.nn.functional.embedding(torch.tensor([2 ** 32 + 1]), torch.tensor(data((6, 4), seed=37)))


@case("Tensor.__setitem__")
def int64_slice_assignment_keeps_64_bits(torch: Any) -> Any:
    big = 2 ** 40 + 5
    out = {}
    for name, index in {"slice": slice(0, 1), "tail": slice(2, None), "step": slice(None, None, 2),
                        "int": 1, "ellipsis": Ellipsis}.items():
        flat = torch.zeros(4, dtype=torch.int64)
        flat[index] = torch.tensor(big) if name != "slice" else torch.tensor([big])
        out[name] = flat
    grid = torch.zeros(3, 4, dtype=torch.int64)
    grid[1:, 1:3] = -big
    grid[0, :] = torch.tensor([big, -big, 7, 2 ** 62])
    out["grid"] = grid
    flat = torch.zeros(4, dtype=torch.int64)
    flat[:2] = big
    out["scalar"] = flat
    f = torch.zeros(2, 3)
    f[:, 1:] = torch.tensor([1.5, 2.5])
    out["float"] = f
    return out
