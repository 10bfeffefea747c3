"""Tensor.put / Tensor.put_ (scripts/opinfo_sweep.py; mindspeed_ms.compat.tensor_put): absent and broken under
MSAdapter; PyTorch writes source into the flat tensor at index."""

from __future__ import annotations

from typing import Any

from conformance.harness import case
from conformance.samples import tensor


@case("Tensor.put")
def put_writes_into_the_flat_tensor(torch: Any) -> Any:
    x = tensor(torch, (3, 4), seed=41, requires_grad=True)
    source = tensor(torch, (2, 2), seed=42, requires_grad=True)
    out = x.put(torch.tensor([[0, -1], [5, 7]]), source)
    (out * tensor(torch, (3, 4), seed=43)).sum().backward()
    added = x.detach().put(torch.tensor([2, 2, -12]), tensor(torch, (3,), seed=44), accumulate=True)
    ints = torch.arange(6).reshape(2, 3).put(torch.tensor([1]), torch.tensor([50]))
    return {"out": out, "x_grad": x.grad, "source_grad": source.grad, "added": added, "ints": ints}


@case("Tensor.put_")
def put_in_place(torch: Any) -> Any:
    x = tensor(torch, (2, 5), seed=45)
    returned = x.put_(torch.tensor([9, 0, 0]), tensor(torch, (3,), seed=46), accumulate=True)
    empty = tensor(torch, (2, 2), seed=47).put_(torch.tensor([], dtype=torch.int64), torch.tensor([]))
    return {"x": x, "same": returned is x, "empty": empty}


@case("Tensor.put")
def put_index_out_of_range(torch: Any) -> Any:
    return tensor(torch, (2, 3), seed=48).put(torch.tensor([6]), torch.tensor([1.0]))
