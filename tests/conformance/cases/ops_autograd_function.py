"""Custom ``torch.autograd.Function`` (the pattern of megatron's tensor-parallel mappings, fused bias activations,
vocab-parallel cross entropy): what the engine does with the gradients a backward returns (``sum_to`` to the
input's shape, casts, None, wrong counts) and the output's ``grad_fn``. The ctx API: ops_autograd_ctx.py."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register, tensor

FUNCTION = "torch.autograd.Function"


def returning(torch: Any, make_grad: Callable[[Any, Any], Any], count: int = 1) -> Any:
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
    returning(torch, make_grad, count).apply(x).sum().backward()
    return {"grad": x.grad, "shape": tuple(x.grad.shape)}


def weights(torch: Any, shape: tuple[int, ...]) -> Any:
    return tensor(torch, shape, seed=7)


# --- the gradient a backward returns ---------------------------------------------------------------------------

def _sum_to_leading(torch: Any) -> Any:  # a bias: [h] input, [s, b, h] gradient (megatron's fused bias GeLU)
    return _leaf_grad(torch, (4,), lambda x, g: weights(torch, (2, 3, 4)))


def _sum_to_size_one(torch: Any) -> Any:
    return _leaf_grad(torch, (1, 4), lambda x, g: weights(torch, (3, 4)))


def _sum_to_leading_and_size_one(torch: Any) -> Any:
    return _leaf_grad(torch, (3, 1), lambda x, g: weights(torch, (2, 3, 5)))


def _sum_to_scalar(torch: Any) -> Any:
    return _leaf_grad(torch, (), lambda x, g: weights(torch, (3,)))


def _incompatible_shape(torch: Any) -> Any:
    return _leaf_grad(torch, (4,), lambda x, g: weights(torch, (3, 5)))


def _same_numel_other_shape(torch: Any) -> Any:
    return _leaf_grad(torch, (2, 3), lambda x, g: weights(torch, (3, 2)))


def _fewer_dims_than_input(torch: Any) -> Any:
    return _leaf_grad(torch, (2, 3), lambda x, g: weights(torch, (3,)))


def _too_many_grads(torch: Any) -> Any:
    return _leaf_grad(torch, (3,), lambda x, g: (g * 2, g * 3))


def _too_many_grads_of_none(torch: Any) -> Any:  # (g, None) for one input: PyTorch drops the trailing None
    return _leaf_grad(torch, (3,), lambda x, g: g * 2, count=2)


def _grad_dtype_cast(torch: Any) -> Any:
    return _leaf_grad(torch, (3,), lambda x, g: (g * 2).double())


def _grad_dtype_cast_half_to_float(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    returning(torch, lambda x, g: (g * 2).half()).apply(x).sum().backward()
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


def _wrong_shape_for_input_without_grad(torch: Any) -> Any:  # PyTorch drops it unchecked
    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, w: Any) -> Any:
            return x * w

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * 2, weights(torch, (5, 7))

    x = tensor(torch, (3,), requires_grad=True)
    Mul.apply(x, tensor(torch, (3,), seed=1)).sum().backward()
    return x.grad


def _main_grad_instead_of_grad(torch: Any) -> Any:  # megatron's LinearWithGradAccumulationAndAsyncCommunication
    class Linear(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, input: Any, weight: Any) -> Any:
            ctx.save_for_backward(input, weight)
            return input.matmul(weight.t())

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            input, weight = ctx.saved_tensors
            weight.main_grad.add_(grad.t().matmul(input))
            return grad.matmul(weight), None

    x = tensor(torch, (4, 3), requires_grad=True)
    w = tensor(torch, (2, 3), seed=1, requires_grad=True)
    w.main_grad = torch.zeros(2, 3)
    (Linear.apply(x, w) * weights(torch, (4, 2))).sum().backward()
    return {"x": x.grad, "w_grad": w.grad, "main_grad": w.main_grad}


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
register(__name__, "wrong_grad_for_input_without_grad_dropped", (FUNCTION,), _wrong_shape_for_input_without_grad)
register(__name__, "none_weight_grad_main_grad_written", (FUNCTION, "Tensor.matmul"), _main_grad_instead_of_grad)
register(__name__, "grad_fn_of_output", (FUNCTION,), _grad_fn_of_output)
register(__name__, "grad_fn_edges_skip_non_tensors", (FUNCTION,), _grad_fn_edges)
