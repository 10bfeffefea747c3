"""Custom ``torch.autograd.Function`` semantics (the pattern of megatron's tensor-parallel mappings, fused bias
activations, vocab-parallel cross entropy, CheckpointFunction): what the engine does with the gradients a backward
returns (``sum_to`` to the input's shape, casts, None, wrong counts), the ctx API (needs_input_grad,
save_for_backward and the version check, mark_dirty, mark_non_differentiable, set_materialize_grads,
setup_context), grad_fn / next_functions as megatron's DDP reads them, and the hooks' order."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register, tensor

FUNCTION = "torch.autograd.Function"


def _returning(torch: Any, make_grad: Callable[[Any, Any], Any], count: int = 1) -> Any:
    """A Function of one tensor (plus ``count - 1`` extra returned grads) whose backward returns
    ``make_grad(input, grad_output)``."""

    class Returning(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            out = make_grad(x, grad)
            return out if count == 1 else (out, *([None] * (count - 1)))

    return Returning


def _leaf_grad(torch: Any, shape: tuple[int, ...], make_grad: Callable[[Any, Any], Any], count: int = 1) -> Any:
    x = tensor(torch, shape, requires_grad=True)
    _returning(torch, make_grad, count).apply(x).sum().backward()
    return {"grad": x.grad, "shape": tuple(x.grad.shape)}


def _weights(torch: Any, shape: tuple[int, ...]) -> Any:
    return tensor(torch, shape, seed=7)


# --- the gradient a backward returns ---------------------------------------------------------------------------

def _sum_to_leading(torch: Any) -> Any:  # a bias: [h] input, [s, b, h] gradient (megatron's fused bias GeLU)
    return _leaf_grad(torch, (4,), lambda x, g: _weights(torch, (2, 3, 4)))


def _sum_to_size_one(torch: Any) -> Any:
    return _leaf_grad(torch, (1, 4), lambda x, g: _weights(torch, (3, 4)))


def _sum_to_leading_and_size_one(torch: Any) -> Any:
    return _leaf_grad(torch, (3, 1), lambda x, g: _weights(torch, (2, 3, 5)))


def _sum_to_scalar(torch: Any) -> Any:
    return _leaf_grad(torch, (), lambda x, g: _weights(torch, (3,)))


def _incompatible_shape(torch: Any) -> Any:
    return _leaf_grad(torch, (4,), lambda x, g: _weights(torch, (3, 5)))


def _same_numel_other_shape(torch: Any) -> Any:
    return _leaf_grad(torch, (2, 3), lambda x, g: _weights(torch, (3, 2)))


def _fewer_dims_than_input(torch: Any) -> Any:
    return _leaf_grad(torch, (2, 3), lambda x, g: _weights(torch, (3,)))


def _too_many_grads(torch: Any) -> Any:
    return _leaf_grad(torch, (3,), lambda x, g: (g * 2, g * 3))


def _too_many_grads_of_none(torch: Any) -> Any:  # (g, None) for one input: PyTorch drops the trailing None
    return _leaf_grad(torch, (3,), lambda x, g: g * 2, count=2)


def _grad_dtype_cast(torch: Any) -> Any:
    return _leaf_grad(torch, (3,), lambda x, g: (g * 2).double())


def _grad_dtype_cast_half_to_float(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    _returning(torch, lambda x, g: (g * 2).half()).apply(x).sum().backward()
    return x.grad


def _too_few_grads(torch: Any) -> Any:
    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, y: Any) -> Any:
            return x * y

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad

    x, y = tensor(torch, (3,), requires_grad=True), tensor(torch, (3,), seed=1, requires_grad=True)
    Two.apply(x, y).sum().backward()
    return x.grad


def _none_grad_for_tensor(torch: Any) -> Any:
    class FirstOnly(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, y: Any) -> Any:
            return x * y

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * 3, None

    x, y = tensor(torch, (3,), requires_grad=True), tensor(torch, (3,), seed=1, requires_grad=True)
    (FirstOnly.apply(x, y) + y).sum().backward()
    z = tensor(torch, (3,), seed=2, requires_grad=True)
    FirstOnly.apply(x.detach(), z).sum().backward()
    return {"x": x.grad, "y": y.grad, "z_only_none": z.grad}


def _grad_for_non_tensor(torch: Any) -> Any:
    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, scale: float) -> Any:
            return x * scale

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * 2, grad.sum()

    x = tensor(torch, (3,), requires_grad=True)
    Scaled.apply(x, 2.0).sum().backward()
    return x.grad


def _non_tensor_arg_none(torch: Any) -> Any:
    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, scale: float, group: Any) -> Any:
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * ctx.scale, None, None

    x = tensor(torch, (3,), requires_grad=True)
    Scaled.apply(x, 2.5, None).sum().backward()
    return x.grad


# --- ctx -------------------------------------------------------------------------------------------------------

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
    out = _returning(torch, lambda s, g: g * s).apply(y)
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
    (a * _weights(torch, (3,))).sum().backward()
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
        out = _returning(torch, lambda s, g: g).apply(x)
    return {"requires_grad": out.requires_grad, "grad_fn": out.grad_fn is None, "values": out}


def _apply_keyword(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    return _returning(torch, lambda s, g: g).apply(x=x)


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
    (Checkpointed.apply(x) * _weights(torch, (3,))).sum().backward()
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


def _scaled_output(torch: Any) -> Any:
    class MyScale(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, k: float) -> Any:
            return x * k

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad, None

    return MyScale.apply(tensor(torch, (3,), requires_grad=True), 2.0)


def _grad_fn_of_output(torch: Any) -> Any:
    edges = _scaled_output(torch).grad_fn.next_functions
    first = edges[0][0]
    return {"name": _scaled_output(torch).grad_fn.name(), "first_edge": (first is not None, edges[0][1]),
            "tensor_edges": sum(node is not None for node, _ in edges),
            "first_has_register_hook": callable(getattr(first, "register_hook", None))}


def _grad_fn_edges(torch: Any) -> Any:  # PyTorch: one edge per tensor input; none for the float
    return len(_scaled_output(torch).grad_fn.next_functions)


register(__name__, "grad_sum_to_leading_dims", (FUNCTION,), _sum_to_leading)
register(__name__, "grad_sum_to_size_one_dims", (FUNCTION,), _sum_to_size_one)
register(__name__, "grad_sum_to_leading_and_size_one", (FUNCTION,), _sum_to_leading_and_size_one)
register(__name__, "grad_sum_to_scalar_input", (FUNCTION,), _sum_to_scalar)
register(__name__, "grad_incompatible_shape_raises", (FUNCTION,), _incompatible_shape)
register(__name__, "grad_same_numel_other_shape_raises", (FUNCTION,), _same_numel_other_shape)
register(__name__, "grad_fewer_dims_than_input_raises", (FUNCTION,), _fewer_dims_than_input)
register(__name__, "too_many_grads_raises", (FUNCTION,), _too_many_grads)
register(__name__, "too_many_grads_trailing_none", (FUNCTION,), _too_many_grads_of_none)
register(__name__, "too_few_grads_raises", (FUNCTION,), _too_few_grads)
register(__name__, "grad_double_cast_to_float", (FUNCTION,), _grad_dtype_cast)
register(__name__, "grad_half_cast_to_float", (FUNCTION,), _grad_dtype_cast_half_to_float)
register(__name__, "none_grad_for_tensor_input", (FUNCTION,), _none_grad_for_tensor)
register(__name__, "grad_for_non_tensor_raises", (FUNCTION,), _grad_for_non_tensor)
register(__name__, "none_grads_for_non_tensor_args", (FUNCTION,), _non_tensor_arg_none)
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
register(__name__, "apply_with_keyword_raises", (FUNCTION,), _apply_keyword)
register(__name__, "backward_inside_backward", (FUNCTION, "torch.autograd.backward"), _backward_inside_backward)
register(__name__, "double_backward", (FUNCTION, "torch.autograd.grad"), _double_backward)
register(__name__, "grad_fn_of_output", (FUNCTION,), _grad_fn_of_output)
register(__name__, "grad_fn_edges_skip_non_tensors", (FUNCTION,), _grad_fn_edges)
