"""median/nanmedian with and without a dimension (values, the result's type and fields), xlogy where x is 0
(values and gradients)."""

from __future__ import annotations

from typing import Any

from conformance.samples import grad_of, register


def _medians(torch: Any) -> Any:
    m = torch.tensor([[1.0, 9.0, 2.0], [7.0, 3.0, 4.0]])
    with_nan = torch.tensor([1.0, float("nan"), 2.0, 5.0])
    by_dim = torch.median(m, 1)
    return {"all": torch.median(m), "method": m.median(), "even": torch.tensor([4.0, 1.0, 3.0, 2.0]).median(),
            "nan": with_nan.median(), "nanmedian": torch.nanmedian(with_nan), "nan_method": with_nan.nanmedian(),
            "by_dim": tuple(by_dim), "fields": (by_dim.values, by_dim.indices),
            "keepdim": tuple(m.median(dim=0, keepdim=True)), "type": type(torch.median(m)).__name__}


def _xlogy(torch: Any) -> Any:
    x = torch.tensor([0.0, 0.0, 2.0, 0.0, 1.5])
    y = torch.tensor([0.0, float("nan"), 3.0, float("inf"), 0.5])
    return {"values": torch.xlogy(x, y), "scalar_x": torch.xlogy(0, torch.tensor([0.0, 2.0])),
            "method": torch.tensor([0.0, 1.0]).xlogy(torch.tensor([0.0, 2.0])),
            "grads": grad_of(torch, torch.xlogy, torch.tensor([0.0, 2.0, 0.5]), torch.tensor([1.0, 3.0, 0.5]))}


register(__name__, "median_without_and_with_dim", ("torch.median", "Tensor.median", "torch.nanmedian",
                                                   "Tensor.nanmedian"), _medians)
register(__name__, "xlogy_at_zero", ("torch.xlogy", "Tensor.xlogy"), _xlogy)
