"""torch functions and Tensor methods MSAdapter lacks or refuses (mindspeed_ms.compat.absent_functions):
result_type / promote_types, Tensor.new_tensor, F.one_hot without num_classes, diag_embed, cummax / cummin,
tensor_split by sections."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


def _outcome(call: Any) -> Any:
    """The call's result, or the builtin class and message of its error (an error in one form must not hide the
    others)."""
    try:
        return call()
    except Exception as error:  # noqa: BLE001  (an error is an outcome to compare)
        return {"error": [klass.__name__ for klass in type(error).__mro__ if klass.__module__ == "builtins"][0],
                "message": str(error)[:80]}


@case("torch.result_type")
def result_type_categories(torch: Any) -> Any:
    f32, f16, i32 = torch.ones(2), torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.int32)
    u8, i8 = torch.ones(2, dtype=torch.uint8), torch.ones(2, dtype=torch.int8)
    bf16 = torch.ones(2, dtype=torch.bfloat16)
    zero_f64, zero_i64, zero_b = torch.tensor(1.0, dtype=torch.float64), torch.tensor(3), torch.tensor(True)
    return {"f16_f32": torch.result_type(f16, f32), "i32_float": torch.result_type(i32, 2.5),
            "i32_int": torch.result_type(i32, 7), "f16_zero_f64": torch.result_type(f16, zero_f64),
            "i32_zero_f64": torch.result_type(i32, zero_f64), "i32_zero_i64": torch.result_type(i32, zero_i64),
            "u8_i8": torch.result_type(u8, i8), "f16_bf16": torch.result_type(f16, bf16),
            "bool_int": torch.result_type(torch.ones(2, dtype=torch.bool), 1),
            "zero_b_float": torch.result_type(zero_b, 1.5), "zero_i64_zero_f64": torch.result_type(zero_i64, zero_f64),
            "u8_zero_i64": torch.result_type(u8, zero_i64), "u8_int": torch.result_type(u8, 300),
            "f32_complex": torch.result_type(f32, 1j), "scalar_first": torch.result_type(2, i32),
            "matches_add": (f16 + zero_f64).dtype == torch.result_type(f16, zero_f64)}


@case("torch.promote_types")
def promote_types_table(torch: Any) -> Any:
    pairs = [(torch.uint8, torch.int8), (torch.uint8, torch.int32), (torch.bool, torch.uint8),
             (torch.float16, torch.bfloat16), (torch.int64, torch.float16), (torch.float32, torch.complex64),
             (torch.bfloat16, torch.float32), (torch.int16, torch.int8), (torch.float32, torch.float32)]
    return [torch.promote_types(a, b) for a, b in pairs] + [torch.promote_types(b, a) for a, b in pairs]


@case("Tensor.new_tensor")
def new_tensor_takes_self_dtype(torch: Any) -> Any:
    half = torch.tensor(data((2, 3), "float16", seed=60))
    ints = torch.tensor([1, 2, 3])
    grad = half.new_tensor([1.5, 2.5], requires_grad=True)
    return {"half": half.new_tensor([[1.25, 2.5]]), "int_from_floats": ints.new_tensor([1.7, -2.2]),
            "dtype": ints.new_tensor([1, 2], dtype=torch.float64), "scalar": half.new_tensor(3.0),
            "empty": half.new_tensor([]), "requires_grad": [grad.requires_grad, grad.is_leaf, grad.dtype]}


@case("Tensor.new_tensor")
def new_tensor_of_a_tensor_is_a_detached_copy(torch: Any) -> Any:
    import warnings

    source = torch.tensor(data((3,), seed=61)).requires_grad_(True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copy = torch.ones(1, dtype=torch.float64).new_tensor(source)
    copy.add_(1.0)
    return {"copy": copy, "source": source.detach(), "requires_grad": copy.requires_grad,
            "warned": [w.category.__name__ for w in caught]}


@case("torch.nn.functional.one_hot")
def one_hot_infers_num_classes(torch: Any) -> Any:
    F = torch.nn.functional
    labels = torch.tensor([[0, 3], [1, 1]])
    return {"inferred": F.one_hot(labels), "given": F.one_hot(labels, 5), "keyword": F.one_hot(labels, num_classes=4),
            "empty_given": F.one_hot(torch.zeros(0, dtype=torch.int64), 3),
            "empty_inferred": _outcome(lambda: F.one_hot(torch.zeros(0, dtype=torch.int64))),
            "too_large": _outcome(lambda: F.one_hot(labels, 3)),
            "negative": _outcome(lambda: F.one_hot(torch.tensor([-1, 0]))),
            "int32": _outcome(lambda: F.one_hot(torch.tensor([0, 1], dtype=torch.int32)))}


@case("torch.diag_embed", "Tensor.diag_embed")
def diag_embed_offsets_and_dims(torch: Any) -> Any:
    x = torch.tensor(data((2, 3), seed=62))
    special = torch.tensor([float("inf"), float("nan"), 1.0])
    return {"plain": torch.diag_embed(x), "up": torch.diag_embed(x, 1), "down": torch.diag_embed(x, offset=-2),
            "dims": torch.diag_embed(x, 0, 0, 2), "negative_dims": x.diag_embed(1, -1, -3),
            "vector": torch.diag_embed(special), "int": torch.diag_embed(torch.tensor([1, 2])),
            "bf16": torch.diag_embed(x.bfloat16(), -1), "empty": torch.diag_embed(torch.ones(2, 0)),
            "same_dims": _outcome(lambda: torch.diag_embed(x, 0, 1, 1)),
            "dim_range": _outcome(lambda: torch.diag_embed(x, 0, 0, 3))}


@case("torch.diag_embed")
def diag_embed_gradient(torch: Any) -> Any:
    x = torch.tensor(data((2, 3), seed=63)).requires_grad_(True)
    (torch.diag_embed(x, 1, 0, 2) * torch.tensor(data((4, 2, 4), seed=64))).sum().backward()
    return x.grad


@case("torch.cummax", "torch.cummin")
def cummax_cummin_ties_and_nan(torch: Any) -> Any:
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 5.0, 5.0], [4.0, float("nan"), 7.0, float("nan"), 1.0, 0.0]])
    ints = torch.tensor([[2, 2, 1, 3], [0, -1, -1, 5]])
    out = torch.cummax(x, 1)
    return {"max": tuple(out), "names": (out.values, out.indices), "min": tuple(torch.cummin(x, dim=-1)),
            "int_max": tuple(torch.cummax(ints, 1)), "int_min": tuple(torch.cummin(ints, 0)),
            "dim0": tuple(torch.cummax(x, 0)), "bf16": tuple(torch.cummax(x.bfloat16(), 1)),
            "scalar": tuple(torch.cummax(torch.tensor(2.5), 0)), "empty": tuple(torch.cummin(torch.ones(0, 3), 0)),
            "bad_dim": _outcome(lambda: torch.cummax(x, 2))}


@case("torch.cummax", "torch.cummin")
def cummax_gradient_goes_to_the_running_extreme(torch: Any) -> Any:
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0], [0.5, 0.25, 0.75, 0.1]]).requires_grad_(True)
    weights = torch.tensor(data((2, 4), seed=65))
    (torch.cummax(x, 1).values * weights).sum().backward()
    grad_max, x.grad = x.grad, None
    (torch.cummin(x, 1)[0] * weights).sum().backward()
    return {"max": grad_max, "min": x.grad}


@case("torch.tensor_split", "Tensor.tensor_split")
def tensor_split_sections_and_indices(torch: Any) -> Any:
    x = torch.tensor(data((7, 4), seed=66))
    return {"sections": torch.tensor_split(x, 3), "more_than_size": torch.tensor_split(x, 9),
            "dim1": torch.tensor_split(x, 3, dim=1), "negative_dim": x.tensor_split(2, -1),
            "indices": torch.tensor_split(x, [1, 5]), "indices_past_end": x.tensor_split([2, 9]),
            "decreasing": torch.tensor_split(x, (5, 2)), "negative_index": torch.tensor_split(x, [-2]),
            "tensor_sections": torch.tensor_split(x, torch.tensor(2)),
            "tensor_indices": torch.tensor_split(x, torch.tensor([3, 4]), dim=0),
            "zero_sections": _outcome(lambda: torch.tensor_split(x, 0)),
            "scalar_input": _outcome(lambda: torch.tensor_split(torch.tensor(1.0), 2)),
            "bad_dim": _outcome(lambda: torch.tensor_split(x, 2, dim=2))}


@case("torch.tensor_split")
def tensor_split_gradient(torch: Any) -> Any:
    x = torch.tensor(data((5, 3), seed=67)).requires_grad_(True)
    first, second, third = torch.tensor_split(x, 3)
    (first.sum() * 2.0 + (second * 3.0).sum() + third.pow(2).sum()).backward()
    return x.grad
