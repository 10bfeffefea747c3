"""Array functions MSAdapter lacks (mindspeed_ms.compat.absent_array_functions): movedim, unflatten,
take_along_dim, block_diag, tril_indices/triu_indices, nanmean, logaddexp."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


def _error(call: Any) -> Any:
    try:
        call()
    except Exception as error:  # noqa: BLE001  (an error is an outcome to compare)
        return [klass.__name__ for klass in type(error).__mro__ if klass.__module__ == "builtins"][0]
    return None


@case("torch.movedim", "Tensor.movedim", "Tensor.unflatten", "torch.unflatten")
def movedim_and_unflatten(torch: Any) -> Any:
    x = torch.tensor(data((2, 3, 4, 5), seed=150))
    return {"one": torch.movedim(x, 1, -1), "many": torch.movedim(x, (0, 3), (2, 0)),
            "method": x.movedim(-1, 0), "unflatten": x.unflatten(2, (2, 2)),
            "inferred": x.unflatten(-1, (-1, 1)), "function": torch.unflatten(x, 1, (3, 1)),
            "counts": _error(lambda: torch.movedim(x, (0, 1), 2)),
            "repeat": _error(lambda: torch.movedim(x, (0, 0), (1, 2))),
            "bad_sizes": _error(lambda: x.unflatten(1, (2, 2))), "range": _error(lambda: torch.movedim(x, 4, 0))}


@case("torch.take_along_dim", "Tensor.take_along_dim")
def take_along_dim_forms(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=151))
    order = torch.argsort(x, dim=1)
    leaf = x.clone().requires_grad_(True)
    torch.take_along_dim(leaf, order[:, :2], 1).sum().backward()
    return {"sorted": torch.take_along_dim(x, order, dim=1),
            "flat": torch.take_along_dim(x, torch.tensor([0, 5, 11])),
            "broadcast": torch.take_along_dim(x, torch.tensor([[1], [0], [3]]), 1),
            "method": x.take_along_dim(order, 1),
            "grad": leaf.grad, "float_index": _error(lambda: torch.take_along_dim(x, order.float(), 1))}


@case("torch.block_diag", "torch.tril_indices", "torch.triu_indices")
def block_diag_and_triangle_indices(torch: Any) -> Any:
    a, b = torch.tensor(data((2, 2), seed=152)), torch.tensor([1, 2, 3])
    return {"blocks": torch.block_diag(a, b, torch.tensor(7.0)), "ints": torch.block_diag(b, torch.tensor([[4]])),
            "tril": torch.tril_indices(3, 4), "tril_offset": torch.tril_indices(4, 3, -1),
            "triu": torch.triu_indices(3, 3, 1), "triu_wide": torch.triu_indices(2, 5, -1),
            "empty": torch.tril_indices(0, 3), "three_d": _error(lambda: torch.block_diag(torch.ones(1, 1, 1)))}


@case("torch.nanmean", "torch.logaddexp", "Tensor.nanmean", "Tensor.logaddexp")
def nanmean_and_logaddexp(torch: Any) -> Any:
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[1.0, nan, 3.0], [nan, nan, nan], [2.0, 4.0, -1.0]])
    a = torch.tensor([0.0, -inf, inf, 1000.0, -2.0, nan, -inf])
    b = torch.tensor([0.5, -inf, inf, 999.0, 3.0, 1.0, 2.0])
    leaf = torch.tensor([0.5, -1.0, 3.0]).requires_grad_(True)
    torch.logaddexp(leaf, torch.tensor([1.0, 2.0, -4.0])).sum().backward()
    return {"all": torch.nanmean(x), "rows": torch.nanmean(x, dim=1), "cols": torch.nanmean(x, 0, keepdim=True),
            "method": x.nanmean(1), "logaddexp": torch.logaddexp(a, b), "method_lae": a.logaddexp(b),
            "grad": leaf.grad, "int": _error(lambda: torch.nanmean(torch.tensor([1, 2])))}
