"""torch.Size printed and combined as PyTorch's (mindspeed_ms.compat.size_type)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case


@case("Tensor.size", "Tensor.shape")
def size_prints_and_combines_as_a_torch_size(torch: Any) -> Any:
    shape = torch.ones(2, 3).shape
    combined = {"add": shape + (4,), "radd": (1,) + shape, "mul": shape * 2, "rmul": 2 * shape,
                "slice": shape[0:1], "size": torch.ones(4, 1).size()}
    return {"repr": repr(shape), "str": str(shape), "format": f"{shape}", "empty": repr(torch.Size([])),
            "in_list": str([shape]),
            **{f"{name}_type": type(value).__name__ for name, value in combined.items()},
            **{f"{name}_is_size": isinstance(value, torch.Size) for name, value in combined.items()},
            **{f"{name}_numel": value.numel() for name, value in combined.items()},
            **{name: tuple(value) for name, value in combined.items()}}
