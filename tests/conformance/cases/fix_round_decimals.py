"""round with decimals and out=, Tensor.round_, and any/all of uint8 (mindspeed_ms.compat.round_decimals,
compat.special_dtypes.truth_wrapper)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("torch.round", "Tensor.round", exact=True)
def round_with_decimals_in_every_float_dtype(torch: Any) -> Any:
    x = torch.tensor(data((64,), seed=31) * 1000.0)
    halves = torch.tensor([0.125, 0.375, -0.125, 2.5, -2.5, 1234.5, 2650.0, 1e30])
    results = {}
    for name in ("float32", "float64", "float16", "bfloat16"):  # named by string: str(dtype) is not PyTorch's
        for decimals in (-3, -2, -1, 0, 1, 2, 3, 6):
            results[f"{name}_{decimals}"] = x.to(getattr(torch, name)).round(decimals=decimals)
            results[f"halves_{name}_{decimals}"] = torch.round(halves.to(getattr(torch, name)), decimals=decimals)
    results["scale_past_float32"] = torch.tensor([1.25, -3.5]).round(decimals=-40)  # nan, as PyTorch's float scale
    results["float16_large_decimals"] = torch.tensor([1.25, 1.35], dtype=torch.float16).round(decimals=30)
    return results


@case("torch.round", "Tensor.round_")
def round_out_in_place_and_refusals(torch: Any) -> Any:
    out = torch.empty(2)
    returned = torch.round(torch.tensor([1.25, 1.35]), decimals=1, out=out)
    inplace = torch.tensor([1.25, 1.35, -2.55])
    same = inplace.round_(decimals=1)
    x = torch.tensor([1.26, -0.04], requires_grad=True)
    x.round(decimals=1).sum().backward()
    return {"out": out, "returned_is_out": returned is out, "inplace": inplace, "same": same is inplace,
            "grad": x.grad}


@case("torch.round")
def round_decimals_of_an_integer_tensor(torch: Any) -> Any:
    return torch.tensor([123, 456]).round(decimals=1)


@case("torch.round")
def round_decimals_of_a_bool_tensor(torch: Any) -> Any:
    return torch.round(torch.tensor([True, False]), decimals=-1)


@case("torch.round")
def round_into_an_out_of_another_dtype(torch: Any) -> Any:
    return torch.round(torch.tensor([1.25]), decimals=1, out=torch.empty(1, dtype=torch.float64))


@case("Tensor.round_")
def round_in_place_of_a_leaf_that_requires_grad(torch: Any) -> Any:
    return torch.tensor([1.25, 1.35], requires_grad=True).round_(decimals=1)


@case("torch.all", "torch.any", "Tensor.all", "Tensor.any")
def any_and_all_of_uint8_are_uint8(torch: Any) -> Any:
    x = torch.tensor([[1, 2, 0], [0, 0, 0], [7, 1, 1]], dtype=torch.uint8)
    empty = torch.zeros((0, 3), dtype=torch.uint8)
    return {"all": x.all(), "any": x.any(), "all_dim": x.all(dim=1), "any_keepdim": torch.any(x, 0, keepdim=True),
            "torch_all": torch.all(x), "empty_all": empty.all(), "empty_any_dim": empty.any(dim=0),
            "int8_all": x.to(torch.int8).all(), "float_any": x.float().any(dim=1)}
