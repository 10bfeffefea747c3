"""torch.unique: sorted values (also for sorted=False, as PyTorch's CPU kernel sorts), the inverse in the input's
shape, the counts, nan (one entry each), bool, and ``dim=`` (slices sorted lexicographically). Exact."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register

_VALUES = [3, 0, 2, 2, 1, 3, 0, -4]

CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "unique_sorted_inverse_counts": (("torch.unique", "Tensor.unique"), lambda torch: {
        "values": torch.unique(torch.tensor(_VALUES)),
        "all": torch.unique(torch.tensor(_VALUES).reshape(2, 4), return_inverse=True, return_counts=True),
        "unsorted_flag": torch.unique(torch.tensor(_VALUES), sorted=False, return_inverse=True),
        "method": torch.tensor(_VALUES).unique(return_counts=True),
        "float": torch.unique(torch.tensor([2.5, -0.5, 2.5, 1.0]), return_inverse=True),
        "bool": torch.tensor([True, False, True]).unique()}),
    "unique_nan": (("torch.unique",), lambda torch: torch.unique(
        torch.tensor([float("nan"), 1.0, float("nan"), -1.0]), return_counts=True)),
    "unique_dim": (("torch.unique",), lambda torch: {
        "rows": torch.unique(torch.tensor([[1, 2], [0, 5], [1, 2]]), dim=0, return_inverse=True, return_counts=True),
        "columns": torch.unique(torch.tensor([[1, 0, 1], [2, 5, 2]]), dim=1, return_inverse=True),
        "negative_dim": torch.unique(torch.tensor([[1, 2], [1, 2]]), dim=-2)}),
}

for _name, (_ops, _run) in CASES.items():
    register(__name__, _name, _ops, _run, exact=True)
