"""0-d inputs PyTorch's OpInfo samples found refused (scripts/opinfo_sweep.py; mindspeed_ms.compat.zero_dim_inputs):
softmax, cumsum, cumprod, sort, argsort, topk, index_select and nonzero of a 0-d tensor, dim 0 or -1."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


def _scalar(torch: Any, value: float = 1.5, requires_grad: bool = False) -> Any:
    return torch.tensor(value, requires_grad=requires_grad)


@case("torch.softmax", "Tensor.softmax", "torch.nn.functional.softmax")
def softmax_of_zero_dim(torch: Any) -> Any:
    x = _scalar(torch, requires_grad=True)
    out = torch.softmax(x, 0)
    (out * 3.0).backward()
    return {"function": out, "method": _scalar(torch).softmax(-1),
            "functional": torch.nn.functional.softmax(_scalar(torch), dim=0), "grad": x.grad}


@case("torch.cumsum", "Tensor.cumsum", "torch.cumprod", "Tensor.cumprod")
def cumulative_ops_of_zero_dim(torch: Any) -> Any:
    x = _scalar(torch, requires_grad=True)
    out = torch.cumprod(x, 0)
    (out * 2.0).backward()
    return {"cumsum": torch.cumsum(_scalar(torch), 0), "cumsum_dtype": torch.cumsum(_scalar(torch), -1,
                                                                                       dtype=torch.float64),
            "cumsum_method": _scalar(torch).cumsum(0), "cumprod": out, "cumprod_int": torch.cumprod(
                torch.tensor(3), 0), "cumprod_method": _scalar(torch).cumprod(dim=0), "grad": x.grad}


@case("torch.sort", "Tensor.sort", "torch.argsort", "Tensor.argsort", "torch.topk", "Tensor.topk")
def ordering_of_zero_dim(torch: Any) -> Any:
    x = _scalar(torch, -2.5)
    values, indices = torch.sort(x)
    desc_values, desc_indices = x.sort(0, descending=True)
    top_values, top_indices = torch.topk(x, 1)
    method_values, method_indices = x.topk(1, largest=False)
    return {"sort": [values, indices], "sort_desc": [desc_values, desc_indices], "argsort": torch.argsort(x),
            "argsort_method": x.argsort(dim=-1), "topk": [top_values, top_indices],
            "topk_method": [method_values, method_indices]}


@case("torch.index_select", "Tensor.index_select", "torch.nonzero", "Tensor.nonzero")
def selection_of_zero_dim(torch: Any) -> Any:
    x = _scalar(torch)
    return {"index_select": torch.index_select(x, 0, torch.tensor([0])),
            "index_select_0d": x.index_select(-1, torch.tensor(0)),
            "nonzero": torch.nonzero(x), "nonzero_of_zero": torch.tensor(0.0).nonzero(),
            "nonzero_tuple": list(torch.nonzero(x, as_tuple=True)),
            "nonzero_tuple_of_zero": list(torch.tensor(0.0).nonzero(as_tuple=True))}


@case("torch.transpose")
def transpose_of_zero_dim_is_a_view(torch: Any) -> Any:
    x = _scalar(torch)
    y = torch.transpose(x, 0, -1)
    y.add_(1.0)
    return {"y": y, "x": x, "shape": list(y.shape)}
