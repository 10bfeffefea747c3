"""The ctx API of a custom ``torch.autograd.Function`` (megatron's CheckpointFunction, vocab-parallel cross entropy,
MoE permutation): needs_input_grad, save_for_backward and the version check, mark_dirty, mark_non_differentiable,
set_materialize_grads, setup_context, once_differentiable, apply under no_grad / with keywords, a backward inside
a backward and a double backward."""

from __future__ import annotations

from typing import Any

from conformance.cases.ops_autograd_function import FUNCTION, returning, weights
from conformance.samples import register, tensor


def _needs_input_grad(torch: Any) -> Any:
    seen = []

    class Three(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, w: Any, k: int) -> Any:
            seen.append(tuple(ctx.needs_input_grad))
            return x * w * k

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            seen.append(tuple(ctx.needs_input_grad))
            return grad, None, None

    x = tensor(torch, (3,), requires_grad=True)
    Three.apply(x, tensor(torch, (3,), seed=1), 2).sum().backward()
    return {"seen": seen, "x": x.grad}


def _saved_then_modified(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    y = x * 1
    out = returning(torch, lambda s, g: g * s).apply(y)
    y.add_(1)
    out.sum().backward()
    return x.grad


def _saved_output(torch: Any) -> Any:
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (out,) = ctx.saved_tensors
            return grad * out

    x = tensor(torch, (3,), requires_grad=True)
    Exp.apply(x).sum().backward()
    return x.grad


def _mark_dirty(torch: Any) -> Any:
    class DoubleInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * 2

    x = tensor(torch, (3,), requires_grad=True)
    a = x * 1
    out = DoubleInPlace.apply(a)
    (out * out).sum().backward()
    return {"same": out is a, "values": a.detach(), "grad": x.grad}


def _mark_non_differentiable(torch: Any) -> Any:
    class MaxAndIndex(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            values, index = x.max(0)
            ctx.mark_non_differentiable(index)
            ctx.save_for_backward(x, index)
            return values, index

        @staticmethod
        def backward(ctx: Any, grad: Any, grad_index: Any) -> Any:
            x, index = ctx.saved_tensors
            return torch.zeros_like(x).scatter(0, index.unsqueeze(0), grad.unsqueeze(0))

    x = tensor(torch, (3, 4), requires_grad=True)
    values, index = MaxAndIndex.apply(x)
    values.sum().backward()
    return {"index_requires_grad": index.requires_grad, "values_requires_grad": values.requires_grad, "grad": x.grad}


def _two_outputs(torch: Any, materialize: bool) -> Any:
    seen = []

    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx: Any, ga: Any, gb: Any) -> Any:
            seen.append([None if g is None else g.clone() for g in (ga, gb)])
            return ga * 2 if gb is None else ga * 2 + gb * 3

    x = tensor(torch, (3,), requires_grad=True)
    a, b = Two.apply(x)
    (a * weights(torch, (3,))).sum().backward()
    return {"seen": seen, "grad": x.grad}


def _identity(torch: Any) -> Any:
    class Identity(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * 3

    x = tensor(torch, (3,), requires_grad=True)
    y = x * 1
    out = Identity.apply(y)
    out.sum().backward()
    return {"is_input": out is y, "has_grad_fn": out.grad_fn is not None, "requires_grad": out.requires_grad,
            "grad": x.grad}


def _non_tensor_outputs(torch: Any) -> Any:
    class WithCount(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2, 5, "tag"

        @staticmethod
        def backward(ctx: Any, grad: Any, *rest: Any) -> Any:
            return grad * 2

    x = tensor(torch, (3,), requires_grad=True)
    out, count, tag = WithCount.apply(x)
    out.sum().backward()
    return {"count": count, "tag": tag, "grad": x.grad}


def _setup_context(torch: Any) -> Any:
    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(x: Any, w: Any) -> Any:
            return x * w

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            x, w = ctx.saved_tensors
            return grad * w, grad * x

    x, w = tensor(torch, (3,), requires_grad=True), tensor(torch, (3,), seed=1, requires_grad=True)
    Mul.apply(x, w).sum().backward()
    return {"x": x.grad, "w": w.grad}


def _once_differentiable(torch: Any) -> Any:
    from torch.autograd.function import once_differentiable

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    x = tensor(torch, (3,), requires_grad=True)
    Square.apply(x).sum().backward()
    return x.grad


def _under_no_grad(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    with torch.no_grad():
        out = returning(torch, lambda s, g: g).apply(x)
    return {"requires_grad": out.requires_grad, "grad_fn": out.grad_fn is None, "values": out}


def _apply_keyword(torch: Any) -> Any:  # PyTorch binds keywords to the forward's parameters
    x = tensor(torch, (3,), requires_grad=True)
    out = returning(torch, lambda s, g: g * 3).apply(x=x)
    out.sum().backward()
    return {"out": out, "grad": x.grad}


def _backward_inside_backward(torch: Any) -> Any:  # megatron's CheckpointFunction: recompute, then backward
    class Checkpointed(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            with torch.no_grad():
                return (x * x).sin()

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            detached = x.detach().requires_grad_(True)
            with torch.enable_grad():
                out = (detached * detached).sin()
            torch.autograd.backward(out, grad)
            return detached.grad

    x = tensor(torch, (3,), requires_grad=True)
    (Checkpointed.apply(x) * weights(torch, (3,))).sum().backward()
    return x.grad


def _double_backward(torch: Any) -> Any:
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    x = tensor(torch, (3,), requires_grad=True)
    (first,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), x)
    return {"first": first, "second": second}


register(__name__, "ctx_needs_input_grad", (FUNCTION,), _needs_input_grad)
register(__name__, "saved_tensor_modified_in_place_raises", (FUNCTION,), _saved_then_modified)
register(__name__, "ctx_saved_output", (FUNCTION,), _saved_output)
register(__name__, "ctx_mark_dirty", (FUNCTION,), _mark_dirty)
register(__name__, "ctx_mark_non_differentiable", (FUNCTION,), _mark_non_differentiable)
register(__name__, "unused_output_materialized", (FUNCTION,), lambda torch: _two_outputs(torch, True))
register(__name__, "unused_output_not_materialized", (FUNCTION,), lambda torch: _two_outputs(torch, False))
register(__name__, "forward_returns_input", (FUNCTION,), _identity)
register(__name__, "non_tensor_outputs", (FUNCTION,), _non_tensor_outputs)
register(__name__, "setup_context_staticmethod", (FUNCTION,), _setup_context)
register(__name__, "once_differentiable", (FUNCTION, "torch.autograd.function.once_differentiable"),
         _once_differentiable)
register(__name__, "apply_under_no_grad", (FUNCTION,), _under_no_grad)
register(__name__, "apply_with_keyword_argument", (FUNCTION,), _apply_keyword)
register(__name__, "backward_inside_backward", (FUNCTION, "torch.autograd.backward"), _backward_inside_backward)
register(__name__, "double_backward", (FUNCTION, "torch.autograd.grad"), _double_backward)
