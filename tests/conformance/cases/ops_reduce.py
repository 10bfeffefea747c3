"""Reductions and scans: whole tensor, along a dim, keepdim, dtype=, float16, int64 and bool (their sums are
int64), empty inputs, values + indices for max/min/topk/sort, gradients."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import grad_of, register, tensor

# name -> (ops, reduce(torch, x), differentiable, dtypes)
REDUCE: dict[str, tuple[tuple[str, ...], Callable[[Any, Any], Any], bool, tuple[str, ...]]] = {
    "sum": (("Tensor.sum",), lambda torch, x: x.sum(), True, ("float32", "float16", "int64", "bool")),
    "sum_dim": (("Tensor.sum",), lambda torch, x: x.sum(dim=1), True, ("float32", "int64", "bool")),
    "sum_dims_keepdim": (("torch.sum",), lambda torch, x: torch.sum(x, dim=(0, 2), keepdim=True), True,
                         ("float32", "int64")),
    "sum_dtype": (("torch.sum",), lambda torch, x: torch.sum(x, dtype=torch.float64), False, ("float32", "int64")),
    "mean": (("Tensor.mean",), lambda torch, x: x.mean(), True, ("float32", "float16")),
    "mean_dim": (("torch.mean",), lambda torch, x: torch.mean(x, -1, keepdim=True), True, ("float32",)),
    "mean_int_raises": (("Tensor.mean",), lambda torch, x: x.mean(), False, ("int64",)),
    "max_all": (("Tensor.max",), lambda torch, x: x.max(), True, ("float32", "int64")),
    "max_dim": (("torch.max",), lambda torch, x: tuple(torch.max(x, dim=1)), False, ("float32", "int64")),
    "max_dim_keepdim": (("Tensor.max",), lambda torch, x: tuple(x.max(-1, keepdim=True)), False, ("float32",)),
    "max_binary": (("torch.max",), lambda torch, x: torch.max(x, torch.zeros_like(x)), True, ("float32",)),
    "min_dim": (("Tensor.min",), lambda torch, x: tuple(x.min(dim=0)), False, ("float32", "int64")),
    "min_all": (("torch.min",), lambda torch, x: torch.min(x), True, ("float32",)),
    "maximum": (("torch.maximum",), lambda torch, x: torch.maximum(x, x.flip(0)), True, ("float32", "int64")),
    "minimum": (("torch.minimum",), lambda torch, x: torch.minimum(x, x.flip(0)), True, ("float32",)),
    "argmax": (("Tensor.argmax",), lambda torch, x: x.argmax(), False, ("float32",)),
    "argmax_dim": (("torch.argmax",), lambda torch, x: torch.argmax(x, dim=-1), False, ("float32", "int64")),
    "argmin": (("Tensor.argmin",), lambda torch, x: x.argmin(dim=1, keepdim=True), False, ("float32",)),
    "all": (("Tensor.all",), lambda torch, x: x.all(), False, ("bool", "float32")),
    "all_fn_dim": (("torch.all",), lambda torch, x: torch.all(x > 0, dim=1), False, ("float32",)),
    "any": (("Tensor.any",), lambda torch, x: x.any(), False, ("bool",)),
    "any_fn": (("torch.any",), lambda torch, x: torch.any(x > 1.5), False, ("float32",)),
    "norm": (("Tensor.norm",), lambda torch, x: x.norm(), True, ("float32",)),
    "norm_matrix_p2": (("torch.norm",), lambda torch, x: torch.norm(x[0], p=2), True, ("float32",)),
    "norm_dim": (("torch.norm",), lambda torch, x: torch.norm(x, dim=-1), True, ("float32",)),
    "norm_inf": (("torch.norm",), lambda torch, x: torch.norm(x, p=float("inf")), False, ("float32",)),
    "vector_norm": (("torch.linalg.vector_norm",), lambda torch, x: torch.linalg.vector_norm(x, 2.0), True,
                    ("float32",)),
    "linalg_norm": (("torch.linalg.norm",), lambda torch, x: torch.linalg.norm(x.reshape(-1)), True, ("float32",)),
    "std": (("Tensor.std",), lambda torch, x: x.std(), True, ("float32",)),
    "std_dim": (("Tensor.std",), lambda torch, x: x.std(dim=1), True, ("float32",)),
    "var_dim": (("Tensor.var",), lambda torch, x: x.var(dim=1, unbiased=False), True, ("float32",)),
    "cumsum": (("torch.cumsum",), lambda torch, x: torch.cumsum(x, dim=1), True, ("float32", "int64", "bool")),
    "cumsum_method": (("Tensor.cumsum",), lambda torch, x: x.cumsum(-1), True, ("float32",)),
    "cumprod": (("torch.cumprod",), lambda torch, x: torch.cumprod(x, 0), True, ("float32", "int64")),
    "logsumexp": (("torch.logsumexp",), lambda torch, x: torch.logsumexp(x, dim=-1), True, ("float32",)),
    "count_nonzero": (("torch.count_nonzero",), lambda torch, x: torch.count_nonzero(x), False,
                      ("int64", "bool", "float32")),
    "count_nonzero_dim": (("torch.count_nonzero",), lambda torch, x: torch.count_nonzero(x, dim=0), False,
                          ("int64",)),
    "topk": (("torch.topk",), lambda torch, x: tuple(torch.topk(x, 2, dim=-1)), False, ("float32", "int64")),
    "topk_smallest": (("Tensor.topk",), lambda torch, x: tuple(x.topk(1, dim=1, largest=False)), False,
                      ("float32",)),
    "sort": (("torch.sort",), lambda torch, x: tuple(torch.sort(x, dim=-1)), False, ("float32", "int64")),
    "sort_descending": (("Tensor.sort",), lambda torch, x: tuple(x.sort(descending=True)), False, ("float32",)),
    "argsort": (("Tensor.argsort",), lambda torch, x: x.argsort(dim=-1), False, ("float32",)),
    "nonzero": (("torch.nonzero",), lambda torch, x: torch.nonzero(x), False, ("int64", "bool")),
    "nonzero_method_tuple": (("Tensor.nonzero",), lambda torch, x: x.nonzero(as_tuple=True), False, ("int64",)),
    "masked_select": (("Tensor.masked_select",), lambda torch, x: x.masked_select(x > 0), False, ("float32",)),
    "equal": (("torch.equal",), lambda torch, x: [torch.equal(x, x.clone()), torch.equal(x, x + 1)], False,
              ("float32", "int64")),
    "histc": (("torch.histc",), lambda torch, x: torch.histc(x, bins=4, min=-2, max=2), False, ("float32",)),
    "diff": (("torch.diff",), lambda torch, x: torch.diff(x, dim=-1), False, ("float32", "int64")),
}


def _make(name: str, ops: tuple[str, ...], reduce: Callable[[Any, Any], Any], differentiable: bool,
          dtypes: tuple[str, ...]) -> None:
    def variant(shape: tuple[int, ...], dtype: str) -> Callable[[Any], Any]:
        def run(torch: Any) -> Any:
            low, high = (-4, 4) if dtype == "int64" else (-2.0, 2.0)
            return reduce(torch, tensor(torch, shape, dtype, seed=31, low=low, high=high))
        return run

    for dtype in dtypes:
        register(__name__, f"{name}__{dtype}", ops, variant((2, 3, 4) if "matrix" not in name else (2, 3, 4), dtype))
    if dtypes[0] == "float32" and "dim" in name or name in ("sum", "mean", "cumsum", "count_nonzero"):
        register(__name__, f"{name}__empty", ops, variant((2, 0, 4), dtypes[0]))
    if differentiable:
        def gradient(torch: Any) -> Any:
            return grad_of(torch, lambda x: reduce(torch, x), tensor(torch, (2, 3, 4), seed=32))
        register(__name__, f"{name}__grad", ops, gradient)


for _name, _spec in REDUCE.items():
    _make(_name, *_spec)


def _bincount(torch: Any) -> Any:
    return torch.bincount(torch.tensor([0, 1, 1, 3, 3, 3]))


def _norm_of_matrix_values(torch: Any) -> Any:
    return {"p2": torch.norm(torch.tensor([[3.0, 4.0], [1.0, 2.0]]), p=2),
            "default": torch.tensor([[3.0, 4.0], [1.0, 2.0]]).norm()}


def _zero_dim_reduce(torch: Any) -> Any:
    x = torch.tensor(2.5)
    return {"sum": x.sum(), "max": x.max(), "mean": x.mean(), "argmax": x.argmax()}


register(__name__, "bincount", ("torch.bincount",), _bincount)
register(__name__, "norm_matrix_flattens", ("torch.norm", "Tensor.norm"), _norm_of_matrix_values)
register(__name__, "zero_dim_reductions", ("Tensor.sum", "Tensor.max", "Tensor.mean", "Tensor.argmax"),
         _zero_dim_reduce)
