"""``Tensor.to(dtype)`` outside autograd's record converted on the host (mindspeed_ms.compat.host_cast), and an integer
divisor converted on the host before ``/=`` (megatron's ``output_tensor /= num_tokens``): PyTorch's values, bit for
bit, in every dtype pair taken (and in the pairs kept on MindSpore's kernels: bfloat16, floats to narrow integers)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case

#: values whose conversions are defined in every pair (no float outside an integer's range, no NaN to an integer)
_FLOATS = [0.0, -0.0, 1.5, -1.5, 2.5, -2.7, 126.9, -127.9, 65504.0, 1e-8, 3.0000001, 1 / 3]


@case("Tensor.to", "Tensor.int", "Tensor.long", "Tensor.float", "Tensor.double", "Tensor.half", "Tensor.bool",
      exact=True)
def to_dtype_between_the_host_dtypes(torch: Any) -> Any:
    out = {}
    floats = {"float16": torch.tensor(_FLOATS).half(), "float32": torch.tensor(_FLOATS),
              "float64": torch.tensor(_FLOATS, dtype=torch.float64)}
    specials = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e-40, -1e-45, 3.4e38, 7e4])
    integers = {"int32": torch.tensor([0, 1, -1, 127, -128, 300, 2 ** 24 + 1, -(2 ** 31)], dtype=torch.int32),
                "int64": torch.tensor([0, 1, -1, 255, 2 ** 40 + 3, -(2 ** 53) - 1, 2 ** 62]),
                "uint8": torch.tensor([0, 1, 255, 128], dtype=torch.uint8),
                "bool": torch.tensor([True, False, True])}
    targets = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64, "int32": torch.int32,
               "int64": torch.int64, "bool": torch.bool, "int8": torch.int8, "uint8": torch.uint8}
    for name, tensor in {**floats, **integers}.items():
        for target, dtype in targets.items():
            if name in floats and target in ("int8", "uint8"):
                continue  # defined only within range: below
            out[f"{name}_to_{target}"] = tensor.to(dtype)
    out["float32_small_to_int8"] = torch.tensor([1.9, -1.9, 100.5, -100.5]).to(torch.int8)
    for target in ("float16", "float64", "bool"):
        out[f"specials_to_{target}"] = specials.to(targets[target])
    out["keyword"] = torch.tensor([2.9, -2.9]).to(dtype=torch.int64)
    out["int"] = torch.tensor([2.9, -2.9]).int()
    out["long"] = torch.tensor([2.9, -2.9]).long()
    out["half"] = torch.tensor([1 / 3]).half()
    out["double_of_int"] = torch.tensor([2 ** 40 + 1]).double()
    out["bool_of_float"] = torch.tensor([0.0, -0.0, 0.5]).bool()
    out["zero_dim"] = torch.tensor(64.0).to(torch.int)
    out["empty"] = torch.zeros(0, 3).to(torch.int64)
    strided = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    out["strided"] = strided.to(torch.int32)
    out["bfloat16"] = torch.tensor(_FLOATS).to(torch.bfloat16).float()
    fresh = torch.tensor([1.5, 2.5])
    converted = fresh.to(torch.float64)
    converted.add_(1)
    out["source_untouched"] = fresh
    out["new_tensor"] = converted is not fresh
    return out


@case("Tensor.to", "Tensor.__itruediv__", "Tensor.div_")
def to_dtype_of_a_tensor_that_records_a_gradient_stays_in_the_graph(torch: Any) -> Any:
    leaf = torch.tensor([1.5, -2.5, 4.0], requires_grad=True)
    wide = (leaf * 2).to(torch.float64)
    (wide * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    return {"grad": leaf.grad, "float64": wide.dtype == torch.float64, "requires_grad": wide.requires_grad}


@case("Tensor.__itruediv__", "Tensor.div_", exact=True)
def divide_in_place_by_an_integer_tensor(torch: Any) -> Any:
    leaf = torch.tensor([3.0, -7.5, 1.0, 0.0], requires_grad=True)
    loss = leaf * 1.0
    tokens = torch.tensor(7, dtype=torch.int32)
    loss /= tokens  # megatron's output_tensor /= num_tokens
    loss.div_(torch.tensor([2, 0, -3, 0]))  # an int64 divisor with zeros: IEEE's infinities and NaN
    loss.sum().backward()
    plain = torch.tensor([5.0, 6.0])
    plain /= torch.tensor(3)
    double = torch.tensor([5.0, 6.0], dtype=torch.float64)
    double /= torch.tensor([True, True])
    return {"loss": loss.detach(), "grad": leaf.grad, "plain": plain, "double": double}


@case("Tensor.to")
def to_dtype_keeps_a_permuted_layout(torch: Any) -> Any:
    """PyTorch's preserve_format: a permuted dense tensor's conversion keeps its strides (a slice's: contiguous)."""
    out = {}
    transposed = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    permuted = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4).permute(2, 0, 1)
    sliced = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, 1:]
    leaf = torch.arange(6, dtype=torch.float32).reshape(2, 3).requires_grad_(True)
    for name, tensor, dtype in (("transposed", transposed, torch.int32), ("permuted", permuted, torch.float32),
                                ("sliced", sliced, torch.int64), ("recorded", (leaf * 2).t(), torch.float64)):
        converted = tensor.to(dtype)
        out[name] = converted
        out[name + "_strides"] = converted.stride()
        out[name + "_contiguous"] = converted.is_contiguous()
    out["recorded"].sum().backward()
    out["recorded_grad"] = leaf.grad
    out["recorded"] = out["recorded"].detach()
    return out
