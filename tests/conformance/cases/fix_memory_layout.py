"""Memory PyTorch shares or lays out in order (mindspeed_ms.compat.memory_layout): torch.as_tensor of a NumPy array
shares it; clone() keeps a non-contiguous tensor's strides (memory_format=torch.preserve_format)."""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.harness import case, data


@case("torch.as_tensor")
def as_tensor_shares_an_array(torch: Any) -> Any:
    array = data((2, 3), seed=90)
    tensor = torch.as_tensor(array)
    array[0, 0] = 100.0
    tensor[1, 2] = -7.0
    other_dtype = torch.as_tensor(array, dtype=torch.float64)
    array[0, 1] = 55.0
    same_dtype = torch.as_tensor(array, dtype=torch.float32)
    array[1, 0] = 33.0
    ints = np.arange(4)
    shared_ints = torch.as_tensor(ints)
    ints[3] = 9
    return {"tensor_sees_array": tensor, "array_sees_tensor": array.copy(), "copy_for_other_dtype": other_dtype,
            "same_dtype_shares": same_dtype, "ints": shared_ints}


@case("torch.as_tensor")
def as_tensor_of_tensors_lists_and_scalars(torch: Any) -> Any:
    x = torch.tensor(data((3,), seed=91))
    return {"same_object": torch.as_tensor(x) is torch.as_tensor(x, dtype=torch.float32) is x,
            "cast": torch.as_tensor(x, dtype=torch.float16), "cast_is_new": torch.as_tensor(x, dtype=torch.int64) is x,
            "floats": torch.as_tensor([1.5, 2.0]), "ints": torch.as_tensor([1, 2]), "bools": torch.as_tensor([True]),
            "scalar": torch.as_tensor(3.5), "int_to_float": torch.as_tensor([1, 2], dtype=torch.float32),
            "numpy_scalar": torch.as_tensor(np.float64(2.5)), "float64_array": torch.as_tensor(np.ones(2))}


@case("Tensor.clone", "Tensor.stride", "Tensor.is_contiguous")
def clone_keeps_a_transposes_strides(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=92))
    cube = torch.tensor(data((2, 3, 4), seed=93))
    shapes = {"t": x.t(), "permuted": cube.permute(2, 0, 1), "swapped": cube.transpose(0, 1),
              "contiguous": x, "vector": x[0]}
    out = {}
    for name, tensor in shapes.items():
        copy = tensor.clone()
        out[name] = [copy, tuple(copy.stride()), copy.is_contiguous(), tuple(copy.contiguous().stride())]
    # (torch.contiguous_format is None under MSAdapter, as preserve_format: not told apart, not compared here)
    preserve = x.t().clone(memory_format=torch.preserve_format)
    function = torch.clone(x.t())
    out["formats"] = [tuple(preserve.stride()), preserve.is_contiguous(), tuple(function.stride()), function]
    return out


@case("Tensor.clone", "Tensor.view", "Tensor.add_")
def clone_of_a_transpose_is_its_own_memory(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=94))
    copy = x.t().clone()
    copy.add_(1.0)
    copy[0, 1] = 50.0

    def view() -> Any:
        try:
            return copy.view(-1)
        except RuntimeError:
            return "RuntimeError"

    return {"copy": copy, "original": x, "view": view(), "reshape": copy.reshape(-1),
            "contiguous_then_view": copy.contiguous().view(-1)}


@case("Tensor.clone")
def clone_of_a_transpose_carries_the_gradient(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=95)).requires_grad_(True)
    copy = x.t().clone()
    (copy * torch.tensor(data((4, 3), seed=96))).sum().backward()
    # bfloat16 on the CPU is cloned through float32 and comes back contiguous (values compared, not strides)
    half = torch.tensor(data((3, 4), seed=97)).bfloat16().t().clone()
    return {"grad": x.grad, "bf16": [half, half.dtype]}
