"""Reductions (mindspeed_ms.compat.reductions): what the OpInfo cases do not pin down — dims as tuples, keepdim,
dtype=, empty inputs in every form, linalg norms' ord/dim combinations, diff's n/prepend/bool, flip with an int."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("torch.sum", "Tensor.sum", "torch.mean", "Tensor.mean")
def empty_sums_and_means(torch: Any) -> Any:
    e = torch.zeros(2, 0, 3)
    i = torch.zeros(0, 2, dtype=torch.int32)
    return {"sum_keepdim": e.sum(dim=(1, 2), keepdim=True), "sum_dtype": torch.sum(e, 1, dtype=torch.float64),
            "sum_int": i.sum(0), "sum_all": torch.sum(i), "mean_keepdim": e.mean(-1, keepdim=True),
            "mean_all": torch.mean(e), "mean_int_dtype": torch.mean(torch.tensor([1, 2, 4]), dtype=torch.float32)}


@case("torch.count_nonzero", "Tensor.count_nonzero", "torch.cumsum", "Tensor.cumsum")
def counts_and_integer_scans_are_int64(torch: Any) -> Any:
    x = torch.tensor(data((2, 3, 4), "int32", seed=5, low=-1, high=1))
    return {"dims": torch.count_nonzero(x, dim=(0, 2)), "method": x.count_nonzero(1),
            "cumsum_int32": torch.cumsum(x, 0), "cumsum_method_bool": (x > 0).cumsum(-1),
            "cumsum_dtype": torch.cumsum(x, 1, dtype=torch.float32), "cumsum_empty": torch.cumsum(x[:, :0], 1)}


@case("torch.argmax", "Tensor.max", "torch.min")
def empty_extremes_and_argmax(torch: Any) -> Any:
    e = torch.zeros(3, 0, 2)
    return {"argmax_keepdim": torch.argmax(e, 2, keepdim=True), "max": tuple(e.max(0)),
            "min_keepdim": tuple(torch.min(e, dim=-1, keepdim=True))}


@case("torch.argmax")
def argmax_over_an_empty_dim_raises(torch: Any) -> Any:
    return torch.argmax(torch.zeros(3, 0), dim=1)


@case("torch.linalg.vector_norm", "torch.linalg.norm", "torch.norm", "Tensor.norm")
def norms_over_dims(torch: Any) -> Any:
    x = torch.tensor(data((2, 3, 4), seed=7))
    h = torch.tensor(data((3, 4), "float16", seed=8))
    inf = float("inf")
    return {"vn_dims": torch.linalg.vector_norm(x, 2, dim=(0, 2)), "vn_inf": torch.linalg.vector_norm(x, inf, -1),
            "vn_neg_inf": torch.linalg.vector_norm(x, -inf), "vn_0": torch.linalg.vector_norm(x, 0, 1),
            "vn_3_keepdim": torch.linalg.vector_norm(x, 3, 1, keepdim=True), "vn_half": torch.linalg.vector_norm(h),
            "ln_dim": torch.linalg.norm(x, dim=1), "ln_fro": torch.linalg.norm(x[0], "fro"),
            "ln_vec_ord": torch.linalg.norm(x[0, 0], 1), "ln_matrix_inf": torch.linalg.norm(x[0], inf),
            "ln_matrix_1": torch.linalg.norm(x[0], 1), "norm_dims_fro": torch.norm(x, dim=(1, 2)),
            "norm_p1_dim": x.norm(1, dim=0), "norm_inf_dim": torch.norm(x, inf, dim=2, keepdim=True)}


@case("torch.linalg.vector_norm")
def vector_norm_of_integers_raises(torch: Any) -> Any:
    return torch.linalg.vector_norm(torch.tensor([3, 4]))


@case("torch.diff", "torch.equal", "Tensor.flip", "torch.flip")
def diff_equal_flip(torch: Any) -> Any:
    x = torch.tensor(data((3, 5), seed=9))
    b = x > 0
    return {"n2": torch.diff(x, n=2), "dim0": torch.diff(x, dim=0), "prepend": torch.diff(x, prepend=x[:, :1]),
            "append": torch.diff(x, dim=0, append=x[:1]), "bool": torch.diff(b), "equal_shape": torch.equal(x, x[:2]),
            "equal_values": torch.equal(x, x * 2), "equal_empty": torch.equal(x[:0], x[:0]),
            "flip_int": x.flip(1), "flip_varargs": x.flip(0, 1), "flip_fn": torch.flip(x, (0,))}
