"""Writes into a tensor saved for a backward, then the backward: PyTorch refuses it (the tensor's version counter,
shared with its views, moved); on MindSpore's CPU backend ``t[index] = value`` and writes through a view counted
nothing, so the backward read the new values and returned wrong gradients silently
(mindspeed_ms.compat.version_counter). ``.data`` is outside the count in both: the backward reads the new values."""

from __future__ import annotations

from typing import Any, Callable

from conformance.harness import case, data


def _saved_then_written(torch: Any, write: Callable[[Any], Any], input_grad: bool = False) -> Any:
    """``a * w`` saves ``a`` for ``w``'s gradient; ``write(a)`` then writes ``a`` before the backward."""
    x = torch.tensor(data((3, 4), seed=211), requires_grad=input_grad)
    w = torch.tensor(data((3, 4), seed=212), requires_grad=True)
    a = x * 1.0
    z = a * w
    write(a)
    z.sum().backward()
    return {"w_grad": w.grad}


@case("Tensor.__setitem__", "Tensor.backward")
def setitem_of_a_row_of_a_saved_tensor(torch: Any) -> Any:
    return _saved_then_written(torch, lambda a: a.__setitem__(0, 5.0))


@case("Tensor.__setitem__", "Tensor.backward")
def setitem_of_a_saved_tensor_that_requires_grad(torch: Any) -> Any:
    return _saved_then_written(torch, lambda a: a.__setitem__((slice(None), 1), 5.0), input_grad=True)


@case("Tensor.__setitem__", "Tensor.backward")
def setitem_by_a_mask_of_a_saved_tensor(torch: Any) -> Any:
    return _saved_then_written(torch, lambda a: a.__setitem__(a > 0, 0.0))


@case("Tensor.add_", "Tensor.__getitem__", "Tensor.backward")
def add_into_a_row_view_of_a_saved_tensor(torch: Any) -> Any:
    return _saved_then_written(torch, lambda a: a[1].add_(1.0))


@case("Tensor.mul_", "Tensor.__getitem__", "torch.no_grad", "Tensor.backward")
def mul_into_a_column_view_without_grad_mode(torch: Any) -> Any:
    def write(a: Any) -> None:
        with torch.no_grad():
            a[:, 2].mul_(3.0)

    return _saved_then_written(torch, write, input_grad=True)


@case("Tensor.copy_", "Tensor.view", "Tensor.backward")
def copy_into_a_view_of_a_saved_tensor(torch: Any) -> Any:
    return _saved_then_written(torch, lambda a: a.view(12)[2:5].copy_(torch.ones(3)))


@case("Tensor.zero_", "Tensor.narrow", "Tensor.backward")
def zero_of_a_narrowed_saved_tensor(torch: Any) -> Any:
    return _saved_then_written(torch, lambda a: a.narrow(1, 1, 2).zero_())


@case("Tensor.__setitem__", "Tensor.detach", "Tensor.backward")
def setitem_through_a_detached_alias(torch: Any) -> Any:
    return _saved_then_written(torch, lambda a: a.detach().__setitem__(0, 2.0))


@case("Tensor.__setitem__", "Tensor.data", "Tensor.backward")
def setitem_through_data_is_not_counted(torch: Any) -> Any:
    return _saved_then_written(torch, lambda a: a.data.__setitem__(0, 7.0))


@case("Tensor._version", "Tensor.__setitem__", "Tensor.add_", "Tensor.fill_")
def writes_count_once_in_the_counter_views_share(torch: Any) -> Any:
    a = torch.tensor(data((4, 6), seed=213)) * 1.0
    row, column, flat = a[1], a[:, 2], a.view(24)
    counts = []
    for write in (lambda: a.__setitem__(0, 1.0), lambda: row.add_(2.0), lambda: column.fill_(3.0),
                  lambda: flat[3:7].mul_(2.0), lambda: a.add_(1.0), lambda: a.__setitem__(a > 4, 0.0)):
        before = (a._version, row._version, column._version, flat._version)
        write()
        counts.append([now - then for now, then in
                       zip((a._version, row._version, column._version, flat._version), before)])
    return {"counts": counts, "a": a}


@case("Tensor.data", "Tensor.copy_", "Tensor.backward")
def a_write_into_a_buffer_parameters_alias_is_not_their_write(torch: Any) -> Any:
    """megatron's distributed optimizer maps parameters into a flat buffer (``param.data = buffer[a:b].view(...)``)
    and, with ``--overlap-param-gather``, all-gathers the next bucket's part of it during a forward: PyTorch's
    parameters keep counters of their own, so the backward of what the forward saved before goes through."""
    buffer = torch.zeros(12)
    params = [torch.nn.Parameter(torch.ones(2, 2)) for _ in range(3)]
    for index, param in enumerate(params):
        param.data = buffer[4 * index:4 * index + 4].view(2, 2)
    x = torch.tensor(data((3, 2), seed=214), requires_grad=True)
    y = (x @ params[1]) @ params[0]  # saves both
    buffer[8:12].copy_(torch.arange(4.0))  # the next bucket's all-gather
    y.sum().backward()
    return {"x_grad": x.grad, "versions": [param._version for param in params]}


@case("Tensor.zero_", "Tensor.backward")
def zero_of_a_saved_tensor_outside_autograd(torch: Any) -> Any:
    """``zero_`` of a float32 tensor that owns its memory and requires no grad runs in host memory on MindSpore's
    CPU backend (megatron's ``grad_data.zero_()``): the write is counted all the same."""
    x = torch.tensor(data((3, 4), seed=215))
    w = torch.tensor(data((3, 4), seed=216), requires_grad=True)
    z = x * w
    x.zero_()
    z.sum().backward()
    return {"w_grad": w.grad}


@case("Tensor.zero_", "Tensor._version", "Tensor.view", "torch.no_grad")
def zero_of_a_buffer_its_views_see_and_count(torch: Any) -> Any:
    """megatron's DDP buffers: ``grad_data.zero_()`` every step, the parameters' ``main_grad`` views of it; and a
    parameter zeroed under ``no_grad``."""
    buffer = torch.tensor(data((12,), seed=217)) * 1.0
    views = [buffer[0:4].view(2, 2), buffer[4:12].view(2, 4)]
    param = torch.nn.Parameter(torch.tensor(data((2, 2), seed=218)))
    before = [buffer._version, views[0]._version, views[1]._version, param._version]
    result = buffer.zero_()
    with torch.no_grad():
        param.zero_()
    after = [buffer._version, views[0]._version, views[1]._version, param._version]
    return {"returns_self": result is buffer, "buffer": buffer, "views": views, "param": param.detach(),
            "moved": [now - then for now, then in zip(after, before)], "leaf": param.is_leaf,
            "requires_grad": param.requires_grad}
