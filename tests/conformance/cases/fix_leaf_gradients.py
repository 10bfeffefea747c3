"""A leaf's ``.grad`` never is the gradient tensor the caller handed ``backward``: PyTorch's gradient accumulator
keeps a copy of a gradient someone else still holds, so freeing the handed gradient afterwards
(``untyped_storage().resize_(0)``, MindSpeed's fb-overlap after each partial backward) leaves ``.grad`` whole.
MindSpore's engine kept the handed tensor itself when it reached the leaf unchanged (``x + c``), and freed ``.grad``
with it (mindspeed_ms.compat.autograd_graph)."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


def _freed_after(torch: Any, backward: Any, given_requires_grad: bool = False) -> Any:
    x = torch.tensor(data((4, 3), seed=101), requires_grad=True)
    y = x + torch.tensor(data((4, 3), seed=102))
    given = torch.tensor(data((4, 3), seed=103), requires_grad=given_requires_grad)
    backward(y, given)
    given.untyped_storage().resize_(0)
    kept = x.grad.untyped_storage().nbytes()
    return {"bytes_kept": kept, "grad": x.grad if kept else None}


@case("Tensor.backward", "Tensor.untyped_storage")
def leaf_gradient_outlives_the_freed_output_gradient(torch: Any) -> Any:
    return _freed_after(torch, lambda y, given: y.backward(given))


@case("torch.autograd.variable.Variable._execution_engine.run_backward", "Tensor.untyped_storage")
def leaf_gradient_outlives_the_freed_gradient_of_the_engine_call(torch: Any) -> Any:
    def backward(y: Any, given: Any) -> None:  # megatron's custom_backward, MindSpeed's run_graph_backward
        torch.autograd.Variable._execution_engine.run_backward(
            tensors=(y,), grad_tensors=(given,), keep_graph=False, create_graph=False, inputs=(),
            allow_unreachable=True, accumulate_grad=True)

    return _freed_after(torch, backward)


@case("torch.autograd.variable.Variable._execution_engine.run_backward", "Tensor.untyped_storage")
def leaf_gradient_outlives_the_freed_received_gradient(torch: Any) -> Any:
    def backward(y: Any, given: Any) -> None:  # megatron's pipeline receive buffers require grad
        torch.autograd.Variable._execution_engine.run_backward(
            tensors=(y,), grad_tensors=(given,), keep_graph=False, create_graph=False, inputs=(),
            allow_unreachable=True, accumulate_grad=True)

    return _freed_after(torch, backward, given_requires_grad=True)

