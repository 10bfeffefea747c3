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


def _indices_outside_autograd(torch: Any) -> Any:
    """Indices never require grad (MindSpore marked topk/sort/max's as requiring it when the values did, and an
    in-place scatter_ by them made its target record); scattering by them into a view of a buffer works."""
    x = torch.tensor([[3.0, 1.0, 2.0, 5.0], [0.5, 4.0, 2.5, 1.0]], requires_grad=True)
    y = x * 2
    values, indices = torch.topk(y, 2)
    buffer = torch.zeros(3, 4)
    buffer[1:].scatter_(1, indices, values.detach())
    return {"topk": indices.requires_grad, "sort": torch.sort(y)[1].requires_grad,
            "max": y.max(1).indices.requires_grad, "values": values.requires_grad, "buffer": buffer,
            "buffer_records": buffer.requires_grad}


register(__name__, "indices_outside_autograd", ("torch.topk", "torch.sort", "torch.max", "Tensor.scatter_"),
         _indices_outside_autograd)
