"""Tensor.view(dtype): the same memory read as another dtype (mindspeed_ms.compat.dtype_views)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


@case("Tensor.view", exact=True)
def view_as_another_dtype_shares_the_memory(torch: Any) -> Any:
    x = torch.tensor([1.0, 2.0, -3.5, 0.0, 1e-40, float("inf")])
    bits = x.view(torch.int32)
    bits.add_(1)  # MindSpeed's --reuse-fp32-param: integer arithmetic on fp32 parameters through the view
    bits[1:3].sub_(1)
    keyword = x.view(dtype=torch.int32)
    return {"x": x, "bits": bits, "keyword": keyword, "no_grad": torch.ones(2, requires_grad=True).view(torch.int32),
            "same_dtype_no_grad": torch.ones(2, requires_grad=True).view(torch.float32),
            "float64": torch.tensor([1.5, -2.0], dtype=torch.float64).view(torch.int64),
            "float16": torch.tensor([1.0, -2.0, 65504.0], dtype=torch.float16).view(torch.int16),
            "int32_to_float": torch.tensor([1065353216, -1082130432, 2139095040], dtype=torch.int32).view(
                torch.float32),
            "uint8_to_bool": torch.tensor([0, 1, 0], dtype=torch.uint8).view(torch.bool)}


@case("Tensor.view", exact=True)
def view_as_a_dtype_of_another_size_scales_the_last_dimension(torch: Any) -> Any:
    x = torch.tensor([[1.0, 2.0], [3.0, -4.0]])
    halves = x.view(torch.int16)
    halves[:, 1].fill_(16448)  # the high half of the first float of each row: 3.0
    return {"halves": halves, "x": x, "bytes": torch.tensor([1.0]).view(torch.uint8),
            "wider": torch.ones(3, 4, dtype=torch.int16).view(torch.float32),
            "column": torch.ones(3, 1, dtype=torch.float32).view(torch.int16)}


@case("Tensor.view")
def view_of_a_0d_tensor_as_another_element_size(torch: Any) -> Any:
    return torch.tensor(1.0).view(torch.int16)


@case("Tensor.view")
def view_with_an_indivisible_last_dimension(torch: Any) -> Any:
    return torch.ones(3, 3, dtype=torch.int16).view(torch.float32)


@case("Tensor.view")
def view_of_a_transposed_tensor_as_another_element_size(torch: Any) -> Any:
    return torch.arange(6, dtype=torch.float32).reshape(2, 3).t().view(torch.int16)
