"""dtype promotion and refusals (mindspeed_ms.compat.promotion, compat.bfloat16): what the OpInfo cases do not pin
down — method forms on integers, other dtype pairs of the 0-d rule, function forms, reflected operators, bfloat16
through every patched entry."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("Tensor.cos", "Tensor.tanh", "Tensor.exp", "Tensor.sigmoid", "torch.exp2", "torch.log1p", "torch.erfc")
def float_math_promotes_integers_in_every_form(torch: Any) -> Any:
    x = torch.tensor([0, 1, 2, -1])
    u = torch.tensor([0, 1, 2], dtype=torch.uint8)
    return {"cos": x.cos(), "tanh": x.tanh(), "exp": x.exp(), "sigmoid": x.sigmoid(), "exp2": torch.exp2(x),
            "log1p": torch.log1p(u), "erfc": torch.erfc(x > 0), "int32_sin": torch.sin(x.to(torch.int32))}


@case("torch.floor", "torch.round", "torch.trunc", "Tensor.ceil", "torch.square", "torch.sign", "torch.isinf")
def integer_rounding_is_the_identity_and_bool_forms(torch: Any) -> Any:
    x = torch.tensor([3, -2, 7], dtype=torch.int32)
    b = torch.tensor([True, False])
    return {"floor": torch.floor(x), "round": torch.round(x), "trunc": torch.trunc(x), "ceil": x.ceil(),
            "square_bool": torch.square(b), "sign_int": torch.sign(x), "sign_bool": b.sign(),
            "isinf_bool": b.isinf(), "isinf_int": torch.isinf(x)}


@case("torch.floor")
def floor_of_bool_raises(torch: Any) -> Any:
    return torch.floor(torch.tensor([True]))


@case("torch.nn.functional.relu")
def functional_relu_of_bool_raises(torch: Any) -> Any:
    return torch.nn.functional.relu(torch.tensor([True, False]))


@case("Tensor.__invert__")
def invert_of_every_integer_width(torch: Any) -> Any:
    return {name: ~torch.tensor([0, 1, 5, 127], dtype=getattr(torch, name))
            for name in ("int8", "int16", "int32", "int64", "uint8")}


@case("Tensor.__add__", "Tensor.__mul__", "torch.add", "torch.mul", "Tensor.sub", "torch.div")
def zero_dim_tensor_keeps_the_dimensioned_dtype(torch: Any) -> Any:
    half = torch.tensor(data((2, 3), "float16"))
    i32 = torch.tensor([1, 2, 3], dtype=torch.int32)
    zero = torch.tensor(0.5)
    return {"half_plus_double": half + torch.tensor(1.5, dtype=torch.float64),
            "int32_times_int64": i32 * torch.tensor(3), "zero_left": zero * half,
            "fn_add": torch.add(half, zero), "fn_mul": torch.mul(i32, torch.tensor(2)),
            "method_sub": half.sub(zero), "fn_div_int": torch.div(i32, torch.tensor(2)),
            "floor_div": torch.div(i32, torch.tensor(2), rounding_mode="floor"),
            "int_plus_float_zero_dim": i32 + zero, "bool_plus_int_zero_dim": (i32 > 1) + torch.tensor(2),
            "bfloat16": torch.tensor(data((2,))).to(torch.bfloat16) + zero}


@case("Tensor.__rsub__")
def bool_subtracted_from_a_scalar_raises(torch: Any) -> Any:
    return 1 - torch.tensor([True, False])


@case("torch.sub")
def sub_of_bool_tensors_raises(torch: Any) -> Any:
    return torch.sub(torch.tensor([True]), torch.tensor([False]))


@case("Tensor.__rand__", "Tensor.__ror__", "Tensor.__rxor__")
def reflected_bit_operators(torch: Any) -> Any:
    x = torch.tensor([1, 6, -3])
    b = torch.tensor([True, False])
    return {"and": 5 & x, "or": 8 | x, "xor": 3 ^ x, "bool_and": True & b, "bool_xor": True ^ b}


@case("torch.matmul", "Tensor.__matmul__", "torch.softmax", "torch.nn.functional.softmax",
      "torch.nn.functional.layer_norm", "torch.zeros")
def bfloat16_through_every_patched_entry(torch: Any) -> Any:
    a = torch.tensor(data((3, 4), seed=1)).to(torch.bfloat16)
    b = torch.tensor(data((4, 2), seed=2)).to(torch.bfloat16)
    w = torch.tensor(data((4,), seed=3)).to(torch.bfloat16)
    z = torch.zeros((2, 3), dtype=torch.bfloat16, requires_grad=True)
    return {"matmul": a @ b, "method": a.matmul(b), "softmax": torch.softmax(a, -1), "tensor_softmax": a.softmax(0),
            "f_softmax": torch.nn.functional.softmax(a, dim=1), "zeros": z, "zeros_leaf": [z.is_leaf, z.requires_grad],
            "layer_norm": torch.nn.functional.layer_norm(a, (4,), w, w)}
