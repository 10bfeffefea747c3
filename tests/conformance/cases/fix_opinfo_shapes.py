"""Result shapes PyTorch's OpInfo samples found wrong (scripts/opinfo_sweep.py; mindspeed_ms.compat.result_shapes):
any with keepdim and tuple dims, squeeze of an empty dim list, nonzero(as_tuple=True) without a nonzero element,
arange of an integer dtype with float bounds and a zero step, the dtype of a float16 cross_entropy,
the gradients of torch.linalg.norm of zeros and of cumprod(dtype=...) through zeros."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import tensor


@case("torch.any")
def any_keepdim_keeps_the_reduced_dimension(torch: Any) -> Any:
    x = tensor(torch, (3, 5), "int64", seed=3, low=-1, high=1)
    flags = tensor(torch, (2, 3, 2), "bool", seed=4)
    return {"dim0": torch.any(x, 0, keepdim=True), "dim1": torch.any(x, dim=1, keepdim=True),
            "negative": torch.any(x.float(), -1, keepdim=True), "plain": torch.any(x, 1),
            "vector": torch.any(torch.tensor([0.0, 2.0]), 0, keepdim=True),
            "tuple": torch.any(flags, (0, 2)), "tuple_keep": torch.any(flags, (0, 2), keepdim=True),
            "all": torch.any(x)}


@case("Tensor.any")
def any_method_with_tuple_or_no_dims(torch: Any) -> Any:
    flags = tensor(torch, (2, 3, 2), "bool", seed=4)
    x = tensor(torch, (2, 3), "float32", seed=5)
    none = flags.any(dim=())
    return {"tuple": flags.any(dim=(0, 2)), "tuple_keep": flags.any((0, -1), True), "list": x.any(dim=[1]),
            "none": none, "none_is_new": none is not flags, "none_float": x.any(dim=()),
            "none_0d": torch.tensor(0.0).any(dim=())}


@case("torch.squeeze", "Tensor.squeeze")
def squeeze_of_no_dims_squeezes_nothing(torch: Any) -> Any:
    x = tensor(torch, (1, 1, 1, 1), seed=5)
    y = tensor(torch, (1, 3, 1), seed=6)
    viewed = y.squeeze([])
    viewed.mul_(2)
    return {"function": torch.squeeze(x, ()), "method": x.squeeze(()), "list": y.squeeze([]), "y": y,
            "some": torch.squeeze(y, (0, 2)), "all": y.squeeze()}


@case("torch.nonzero")
def nonzero_as_tuple_without_nonzero_elements(torch: Any) -> Any:
    return {"vector": torch.nonzero(torch.zeros(5), as_tuple=True),
            "matrix": torch.nonzero(torch.zeros(2, 3), as_tuple=True),
            "three": torch.nonzero(torch.zeros(2, 0, 3), as_tuple=True),
            "some": torch.nonzero(torch.tensor([[0.0, 1.0], [2.0, 0.0]]), as_tuple=True),
            "flat": torch.nonzero(torch.zeros(4))}


@case("Tensor.flatten")
def flatten_method_is_a_view(torch: Any) -> Any:
    base = tensor(torch, (2, 3, 4), seed=7)
    flat = base.flatten(1)
    flat.mul_(2)
    middle = base.flatten(start_dim=0, end_dim=1)
    middle.add_(1)
    return {"base": base, "flat": flat, "middle": middle, "all": base.flatten()}


@case("Tensor.flatten")
def flatten_method_of_bfloat16(torch: Any) -> Any:
    return tensor(torch, (2, 3, 4), "bfloat16", seed=8).flatten(1)


@case("torch.diff")
def diff_of_order_zero_is_a_copy(torch: Any) -> Any:
    x = tensor(torch, (5, 5), seed=9)
    same = torch.diff(x, n=0, dim=0, prepend=tensor(torch, (1, 5), seed=10), append=tensor(torch, (2, 5), seed=11))
    same.mul_(3)
    return {"same": same, "x": x, "plain": torch.diff(x, n=0), "once": torch.diff(x, dim=0)}


@case("Tensor.ravel")
def ravel_of_a_non_contiguous_tensor_is_a_copy(torch: Any) -> Any:
    base = tensor(torch, (250,), seed=12)
    strided = base[1::2].view(5, 5, 5)
    flat = strided.ravel()
    flat.mul_(-1)
    owner = tensor(torch, (3, 4), seed=13)
    same = owner.ravel()
    same.add_(1)
    return {"base": base, "flat": flat, "owner": owner, "same": same, "transposed": owner.t().ravel()}


@case("torch.arange")
def integer_arange_truncates_float_bounds(torch: Any) -> Any:
    return {"end": torch.arange(0, 2.5, 1, dtype=torch.int64), "negative": torch.arange(0, -3.5, -2, dtype=torch.int64),
            "start": torch.arange(-1.5, 4.2, 1.7, dtype=torch.int64), "one": torch.arange(3.9, dtype=torch.int32),
            "int32": torch.arange(-1.5, 4.2, 1.7, dtype=torch.int32), "one64": torch.arange(3.9, dtype=torch.int64),
            "zero_step32": torch.arange(0, 2, 0.5, dtype=torch.int32),
            "neg32": torch.arange(0, -3.5, -2, dtype=torch.int32),
            "ints": torch.arange(1, 9, 3), "floats": torch.arange(0, 2.5, 0.5), "float_end": torch.arange(2.5)}


@case("torch.arange")
def arange_zero_step_raises(torch: Any) -> Any:
    return torch.arange(0, 5, 0)


@case("torch.arange")
def integer_arange_step_truncated_to_zero_raises(torch: Any) -> Any:
    return torch.arange(0, 5, 0.5, dtype=torch.int64)


@case("torch.nn.functional.cross_entropy", "Tensor.backward")
def cross_entropy_float16_returns_float16(torch: Any) -> Any:
    logits = tensor(torch, (4, 5), "float16", seed=9).requires_grad_(True)
    target = torch.tensor([0, 3, 4, 1])
    loss = torch.nn.functional.cross_entropy(logits, target)
    loss.backward()
    return {"mean": loss, "grad": logits.grad,
            "sum": torch.nn.functional.cross_entropy(logits, target, reduction="sum"),
            "none": torch.nn.functional.cross_entropy(logits, target, reduction="none"),
            "smoothed": torch.nn.functional.cross_entropy(logits, target, label_smoothing=0.1)}


@case("torch.linalg.norm", "Tensor.backward")
def linalg_norm_of_zeros_has_zero_gradient(torch: Any) -> Any:
    grads = {}
    for name, shape, kwargs in (("vector", (5,), {}), ("matrix", (2, 3), {}), ("dim", (2, 3), {"dim": 1}),
                                ("ord3", (4,), {"ord": 3})):
        x = torch.zeros(shape, requires_grad=True)
        torch.linalg.norm(x, **kwargs).sum().backward()
        grads[name] = x.grad
    return grads


@case("torch.cumprod", "Tensor.backward")
def cumprod_with_dtype_through_zeros_has_finite_gradient(torch: Any) -> Any:
    x = tensor(torch, (3, 4), seed=10)
    x[1, 2] = 0.0
    x[0, 1] = 0.0
    x.requires_grad_(True)
    result = torch.cumprod(x, 1, dtype=torch.float32)
    result.sum().backward()
    return {"result": result, "grad": x.grad}
