"""The autograd graph as the field walks it: megatron's DDP grad-accumulator hook
(``param.expand_as(param).grad_fn.next_functions[0][0].register_hook``), ``register_post_accumulate_grad_hook``, the
order of tensor hooks / accumulate hooks / retain_grad, and ``torch.autograd.graph`` (saved_tensors_hooks,
register_multi_grad_hook) and the engine's ``queue_callback`` as MindSpeed uses them."""

from __future__ import annotations

from typing import Any

from conformance.samples import register, tensor


def _megatron_grad_accumulator_hook(torch: Any) -> Any:
    param = tensor(torch, (3,), requires_grad=True)
    main_grad = torch.zeros(3)
    seen = []

    def hook(*unused: Any) -> None:  # megatron's DDP _make_backward_post_hook: move .grad into main_grad
        seen.append(param.grad is not None)
        main_grad.add_(param.grad.data)
        param.grad = None

    accumulator = param.expand_as(param).grad_fn.next_functions[0][0]
    accumulator.register_hook(hook)
    (param * tensor(torch, (3,), seed=1)).sum().backward()
    return {"seen": seen, "main_grad": main_grad, "grad": param.grad}


def _post_accumulate_grad_hook(torch: Any) -> Any:
    param = tensor(torch, (3,), requires_grad=True)
    seen = []

    def hook(p: Any) -> None:
        seen.append((p is param, p.grad.clone()))

    param.register_post_accumulate_grad_hook(hook)
    (param * param).sum().backward()
    return {"seen": seen, "grad": param.grad}


def _hooks_order(torch: Any) -> Any:
    order = []
    x = tensor(torch, (3,), requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: order.append("y_hook") or g * 10)
    x.register_hook(lambda g: order.append("x_hook"))
    x.register_post_accumulate_grad_hook(lambda p: order.append(f"x_post:{p.grad is not None}"))
    (y * y).sum().backward()
    return {"order": order, "y_grad": y.grad, "x_grad": x.grad}


def _saved_tensors_hooks(torch: Any) -> Any:
    calls = []

    def pack(t: Any) -> Any:
        calls.append("pack")
        return t

    def unpack(t: Any) -> Any:
        calls.append("unpack")
        return t

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    x = tensor(torch, (3,), requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = Square.apply(x)
    out.sum().backward()
    return {"calls": calls, "grad": x.grad}


def _multi_grad_hook(torch: Any) -> Any:
    seen = []
    a, b = tensor(torch, (3,), requires_grad=True), tensor(torch, (3,), seed=1, requires_grad=True)
    torch.autograd.graph.register_multi_grad_hook(
        (a, b), lambda grads: seen.append([None if g is None else g.clone() for g in grads]))
    (a * b).sum().backward()
    return seen


def _queue_callback(torch: Any) -> Any:
    order = []
    x = tensor(torch, (3,), requires_grad=True)

    def hook(grad: Any) -> None:
        order.append("hook")
        torch.autograd.Variable._execution_engine.queue_callback(lambda: order.append(f"callback:{x.grad is not None}"))

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    return order


register(__name__, "megatron_grad_accumulator_hook", ("Tensor.expand_as", "Tensor.grad_fn"),
         _megatron_grad_accumulator_hook)
register(__name__, "post_accumulate_grad_hook", ("Tensor.register_post_accumulate_grad_hook",),
         _post_accumulate_grad_hook)
register(__name__, "hooks_order", ("Tensor.register_hook", "Tensor.retain_grad"), _hooks_order)
register(__name__, "saved_tensors_hooks_on_function", ("torch.autograd.graph.saved_tensors_hooks",),
         _saved_tensors_hooks)
register(__name__, "register_multi_grad_hook", ("torch.autograd.graph.register_multi_grad_hook",),
         _multi_grad_hook)
register(__name__, "queue_callback", ("torch.autograd.Variable._execution_engine.queue_callback",),
         _queue_callback)
