"""A backward through a view whose base was written in place after the view was taken: PyTorch rebases the view's
history; MindSpore's engine cannot ("The pointer[base_shape] is null"), so it is refused with a typed error (loud,
mindspeed_ms.compat.autograd_graph), and a view taken after the write is right."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("Tensor.mul_", "Tensor.__getitem__", "Tensor.backward")
def backward_through_a_view_written_through_its_base(torch: Any) -> Any:
    a = torch.tensor(data((3, 4), seed=98), requires_grad=True)
    y = a * 2
    row = y[1]
    y.mul_(3)
    (row * row).sum().backward()
    return {"grad": a.grad}


@case("Tensor.mul_", "Tensor.__getitem__", "Tensor.backward")
def a_view_taken_after_the_write_is_right(torch: Any) -> Any:
    a = torch.tensor(data((3, 4), seed=99), requires_grad=True)
    y = a * 2
    y.mul_(3)
    row = y[1]
    (row * row).sum().backward()
    return {"grad": a.grad, "row": row.detach()}
