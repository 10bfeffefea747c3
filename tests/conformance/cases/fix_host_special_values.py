"""``torch.isnan`` / ``isinf`` / ``isfinite`` and the Tensor methods of float32 tensors, computed on the host
(mindspeed_ms.compat.host_special_values): PyTorch's bool results element for element, as megatron's loss and
gradient-norm checks call them (a 0-d tensor that records a gradient, Python's truth test of the answer)."""

from __future__ import annotations

import struct
from typing import Any

from conformance.harness import case


def _float32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


@case("torch.isnan", "torch.isinf", "torch.isfinite", "Tensor.isnan", "Tensor.isinf", "Tensor.isfinite")
def predicates_of_every_kind_of_float32(torch: Any) -> Any:
    values = [0.0, -0.0, 1.5, -3.0e38, 3.4028235e38, 1e-45, -1e-40, float("inf"), -float("inf"), float("nan"),
              _float32(0x7FC00001), _float32(0xFFC00000), _float32(0x7F800001)]  # NaN payloads, a negative NaN
    tensor = torch.tensor(values, dtype=torch.float32)
    grid = tensor[:12].reshape(3, 4)
    out = {}
    for name in ("isnan", "isinf", "isfinite"):
        out[name] = getattr(torch, name)(tensor)
        out[name + "_method"] = getattr(tensor, name)()
        out[name + "_grid"] = getattr(torch, name)(grid)
        out[name + "_strided"] = getattr(torch, name)(grid.t())  # a view with strides: the kernel's path
        out[name + "_empty"] = getattr(torch, name)(torch.zeros(0, 3))
        out[name + "_0d"] = getattr(torch, name)(torch.tensor(float("nan")))
    return out


@case("torch.isnan", "torch.isinf", "Tensor.isfinite")
def megatrons_checks_of_a_loss_that_records_a_gradient(torch: Any) -> Any:
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = torch.cat([(leaf * 3.0).sum().view(1), torch.tensor([5.0])])
    nan, inf = torch.isnan(loss[0]), torch.isinf(loss[0])
    loss[0].backward()
    overflowed = leaf * 3e38
    return {"nan": nan, "inf": inf, "truth": bool(nan) or bool(inf), "requires_grad": nan.requires_grad,
            "is_leaf": inf.is_leaf, "grad": leaf.grad, "finite": overflowed.isfinite(),
            "finite_requires_grad": overflowed.isfinite().requires_grad}


@case("torch.isnan", "torch.isinf")
def other_dtypes_keep_their_paths(torch: Any) -> Any:
    values = [0.0, float("nan"), float("inf"), -2.5]
    return {"float64": torch.isnan(torch.tensor(values, dtype=torch.float64)),
            "float16": torch.isinf(torch.tensor(values, dtype=torch.float16)),
            "int": torch.isnan(torch.tensor([1, 2])), "bool": torch.isinf(torch.tensor([True]))}
