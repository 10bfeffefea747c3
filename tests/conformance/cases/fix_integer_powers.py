"""An integer or bool tensor to a negative Python integer: PyTorch refuses ("Integers to negative integer powers are
not allowed."); MindSpore returned truncated quotients silently (``tensor([2, 3]) ** -1`` -> ``[0, 0]``;
mindspeed_ms.compat.grad_edges). A tensor exponent, negative or not, is computed on both sides."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


@case("Tensor.__pow__")
def int64_tensor_to_a_negative_integer(torch: Any) -> Any:
    return torch.tensor([2, 3, -1]) ** -1


@case("torch.pow")
def int32_tensor_to_a_negative_integer(torch: Any) -> Any:
    return torch.pow(torch.tensor([2, 5], dtype=torch.int32), -2)


@case("Tensor.pow_")
def uint8_tensor_to_a_negative_integer_in_place(torch: Any) -> Any:
    return torch.tensor([2, 4], dtype=torch.uint8).pow_(-1)


@case("Tensor.pow")
def bool_tensor_to_a_negative_integer(torch: Any) -> Any:
    return torch.tensor([True, False]).pow(-1)


@case("Tensor.__pow__", "torch.pow")
def integer_tensor_to_negative_tensor_exponents_and_floats(torch: Any) -> Any:
    base = torch.tensor([2, 3, -1])
    return {"tensor": base ** torch.tensor([-1, 1, -1]), "zero_d": base ** torch.tensor(-1),
            "float": base ** -1.0, "zero": base ** 0, "scalar_base": torch.pow(2, torch.tensor([-1, 2])),
            "rpow": (-1) ** base}
