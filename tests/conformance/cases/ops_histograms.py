"""torch.histc and torch.bincount, as the MoE routers and dispatchers of the field call them (expert ids counted into
``num_experts`` bins) and at the edges: values on the bin edges and a hair off them, outside the range, nan, empty
inputs, the default range (the data's), integer and float64 inputs, refusals. Counts compare exactly."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from conformance.samples import register


def _near_edges(torch: Any, dtype: Any) -> Any:
    """Values on each of 7 bins' edges over [-1.3, 2.9], one ulp either side, and outside the range."""
    edges = np.linspace(-1.3, 2.9, 8).astype(dtype)
    values = np.concatenate([edges, np.nextafter(edges, dtype(-np.inf)), np.nextafter(edges, dtype(np.inf)),
                             np.array([-5.0, 7.0, 0.25, 0.5], dtype)])
    return torch.tensor(values)


CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "histc_expert_ids": (("torch.histc",), lambda torch: {
        "float": torch.histc(torch.tensor([0.0, 3, 3, 1, 7, 7, 7, 2]), bins=8, min=0, max=8),
        "method": torch.tensor([0.0, 1, 1, 3]).histc(bins=4, min=0, max=4),
        "positional": torch.histc(torch.tensor([0.0, 1, 1, 3]), 4, 0, 4)}),
    "histc_edges": (("torch.histc",), lambda torch: {
        "float32": torch.histc(_near_edges(torch, np.float32), bins=7, min=-1.3, max=2.9),
        "float64": torch.histc(_near_edges(torch, np.float64), bins=7, min=-1.3, max=2.9),
        "outside_and_nan": torch.histc(torch.tensor([-1.0, 4, 1, 2, float("nan"), 3]), bins=4, min=0, max=3)}),
    "histc_empty_and_default_range": (("torch.histc",), lambda torch: {
        "empty": torch.histc(torch.zeros(0), bins=3, min=0, max=3),
        "empty_default": torch.histc(torch.zeros(0), bins=3),
        "default": torch.histc(torch.tensor([1.0, 2, 2, 5])),
        "default_bins": torch.histc(torch.tensor([1.0, 2, 2, 5]), bins=4),
        "one_value": torch.histc(torch.tensor([2.0, 2, 2]), bins=4)}),
    "histc_infinite_range_raises": (("torch.histc",),
                                    lambda torch: torch.histc(torch.tensor([1.0, 2]), bins=2, min=0, max=float("inf"))),
    "histc_inverted_range_raises": (("torch.histc",),
                                    lambda torch: torch.histc(torch.tensor([1.0, 2]), bins=2, min=3, max=1)),
    "histc_zero_bins_raises": (("torch.histc",), lambda torch: torch.histc(torch.tensor([1.0, 2]), bins=0)),
    "bincount_edges": (("torch.bincount",), lambda torch: {
        "plain": torch.bincount(torch.tensor([0, 2, 2, 5])),
        "minlength": torch.bincount(torch.tensor([0, 2]), minlength=5),
        "empty": torch.bincount(torch.zeros(0, dtype=torch.int64)),
        "empty_minlength": torch.bincount(torch.zeros(0, dtype=torch.int64), minlength=3),
        "weights": torch.bincount(torch.tensor([0, 1, 1]), weights=torch.tensor([0.5, 1.0, 2.0]))}),
    "bincount_negative_raises": (("torch.bincount",), lambda torch: torch.bincount(torch.tensor([0, -1]))),
}

for _name, (_ops, _run) in CASES.items():
    register(__name__, _name, _ops, _run, exact=True)
