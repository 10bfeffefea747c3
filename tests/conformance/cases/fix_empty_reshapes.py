"""Reshapes of an empty tensor with an ambiguous -1 (scripts/opinfo_sweep.py; mindspeed_ms.compat.empty_reshapes):
PyTorch raises RuntimeError; the unambiguous ones still work."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


@case("Tensor.view")
def view_of_no_elements_to_an_ambiguous_shape(torch: Any) -> Any:
    return torch.zeros(0, 3).view(0, -1)


@case("Tensor.reshape")
def reshape_method_of_no_elements_to_an_ambiguous_shape(torch: Any) -> Any:
    return torch.zeros(2, 0, 3).reshape((-1, 3, 0))


@case("torch.reshape")
def reshape_of_no_elements_to_an_ambiguous_shape(torch: Any) -> Any:
    return torch.reshape(torch.zeros(0, 4), [4, 0, -1])


@case("Tensor.view", "Tensor.reshape", "torch.reshape")
def unambiguous_reshapes_of_no_elements(torch: Any) -> Any:
    x = torch.zeros(0, 3)
    return {"view": x.view(-1, 3), "flat": x.view(-1), "reshape": x.reshape(3, 0, 2), "function": torch.reshape(
        x, (-1, 6))}
