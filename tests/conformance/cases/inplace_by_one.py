"""In-place multiplication and true division by the Python 1 (megatron's loss scaling ``output_tensor *= cp_size``,
``output_tensor /= num_microbatches``): no kernel on our side, the same values, gradients and refusals as PyTorch."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("Tensor.__imul__", "Tensor.__itruediv__", "Tensor.mul_", "Tensor.div_")
def scaling_a_loss_by_one_keeps_values_and_gradients(torch: Any) -> Any:
    w = torch.tensor(data((3, 4), seed=11), requires_grad=True)
    x = torch.tensor(data((3, 4), seed=12))
    loss = (w * x).sum()
    loss *= 1
    loss /= 1
    loss = loss.mul_(1.0).div_(1)
    loss.backward()
    return {"loss": loss.detach(), "grad": w.grad}


@case("Tensor.__imul__", "Tensor.__itruediv__", "Tensor.mul_", "Tensor.div_")
def scaling_by_one_keeps_special_values_aliases_views_and_integers(torch: Any) -> Any:
    t = torch.tensor([float("nan"), -0.0, float("inf"), -float("inf"), 1e-45, 3.5])
    alias = t
    t *= 1
    t /= 1
    returned_mul = t.mul_(1.0)
    returned_div = t.div_(1.0)
    base = torch.tensor(data((3, 4), seed=13))
    view = base[1:, 1:3]
    view *= 1
    view /= 1
    ints = torch.tensor([1, -2, 3])
    ints *= 1
    ints.mul_(1)
    halves = torch.tensor([1.5, -2.25], dtype=torch.float16)
    halves *= 1
    halves /= 1
    return {"t": t, "reciprocal": torch.reciprocal(t), "alias_is_t": alias is t, "mul_is_self": returned_mul is t,
            "div_is_self": returned_div is t, "base": base, "ints": ints, "halves": halves}


@case("Tensor.__imul__")
def leaf_requiring_grad_times_one_in_place_raises(torch: Any) -> Any:
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    w *= 1
    return w


@case("Tensor.__itruediv__")
def int64_divided_by_one_in_place_refuses_float_result(torch: Any) -> Any:
    t = torch.tensor([1, 2, 3])
    t /= 1
    return t


@case("Tensor.__imul__")
def int64_times_float_one_in_place_refuses_float_result(torch: Any) -> Any:
    t = torch.tensor([1, 2, 3])
    t *= 1.0
    return t


@case("Tensor.__imul__")
def bool_times_one_in_place_refuses_integer_result(torch: Any) -> Any:
    t = torch.tensor([True, False])
    t *= 1
    return t


@case("Tensor.div_", "Tensor.mul_")
def division_by_one_with_rounding_and_by_true_still_compute(torch: Any) -> Any:
    t = torch.tensor([1.5, -1.5, 2.0])
    floored = t.clone().div_(1, rounding_mode="floor")
    truncated = t.clone().div_(1.0, rounding_mode="trunc")
    by_true = t.clone().mul_(True)
    by_tensor_one = t.clone().mul_(torch.tensor(1.0))
    return {"floored": floored, "truncated": truncated, "by_true": by_true, "by_tensor_one": by_tensor_one}
