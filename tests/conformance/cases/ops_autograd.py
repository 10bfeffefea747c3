"""Autograd entry points and state: backward (with gradient, retain_graph, accumulation), autograd.grad, hooks,
retain_grad, requires_grad_/detach_, grad-mode switches, and what a failing call leaves behind."""

from __future__ import annotations

from typing import Any

from conformance.samples import register, tensor


def _backward_accumulates(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    return x.grad


def _backward_gradient(torch: Any) -> Any:
    x = tensor(torch, (2, 3), requires_grad=True)
    y = x * 2 + 1
    y.backward(torch.ones(2, 3) * 0.5)
    return x.grad


def _autograd_backward(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    a, b = x * 2, x.exp()
    torch.autograd.backward([a, b], grad_tensors=[torch.ones(3), torch.full((3,), 2.0)])
    return x.grad


def _backward_twice_raises(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    y.backward()
    return x.grad


def _retain_graph(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad


def _nonscalar_backward_raises(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    (x * 2).backward()
    return x.grad


def _autograd_grad(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    w = tensor(torch, (3,), seed=1, requires_grad=True)
    (gx, gw) = torch.autograd.grad((x * w).sum(), [x, w])
    return {"gx": gx, "gw": gw, "x_grad_untouched": x.grad}


def _register_hook(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    seen = []
    y = x * 2
    y.register_hook(lambda g: seen.append(g.clone()))
    x.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    return {"seen": seen, "x_grad": x.grad}


def _retain_grad(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    y = x * 3
    y.retain_grad()
    (y * y).sum().backward()
    return {"y_grad": y.grad, "x_grad": x.grad}


def _requires_grad_and_detach_(torch: Any) -> Any:
    x = tensor(torch, (3,))
    r = x.requires_grad_()
    y = x * 2
    z = y.detach()
    d = (x * 3).detach_()
    return {"returns_self": r is x, "x": x.requires_grad, "y": y.requires_grad, "z": z.requires_grad,
            "d": d.requires_grad, "is_leaf": [x.is_leaf, y.is_leaf, z.is_leaf]}


def _grad_modes(torch: Any) -> Any:
    x = tensor(torch, (3,), requires_grad=True)
    with torch.no_grad():
        a = x * 2
        inside = torch.is_grad_enabled()
        with torch.enable_grad():
            b = x * 2
    return {"a": a.requires_grad, "b": b.requires_grad, "inside": inside, "outside": torch.is_grad_enabled()}


def _grad_of_int_raises(torch: Any) -> Any:
    return torch.tensor([1, 2]).requires_grad_()


def _backward_through_view_and_cat(torch: Any) -> Any:
    x = tensor(torch, (4, 3), requires_grad=True)
    parts = torch.split(x, 2)
    y = torch.cat([parts[1], parts[0].t().reshape(2, 3)], 0)
    (y * tensor(torch, (4, 3), seed=3)).sum().backward()
    return x.grad


def _checkpoint_detach_variable(torch: Any) -> Any:
    import torch.utils.checkpoint as checkpoint

    x = tensor(torch, (3,), requires_grad=True)
    (d,) = checkpoint.detach_variable((x * 2,))
    return {"requires_grad": d.requires_grad, "is_leaf": d.is_leaf, "values": d}


register(__name__, "backward_accumulates", ("Tensor.backward",), _backward_accumulates)
register(__name__, "backward_with_gradient", ("Tensor.backward",), _backward_gradient)
register(__name__, "autograd_backward_grad_tensors", ("torch.autograd.backward",), _autograd_backward)
register(__name__, "backward_twice_raises", ("Tensor.backward",), _backward_twice_raises)
register(__name__, "backward_retain_graph", ("Tensor.backward",), _retain_graph)
register(__name__, "backward_of_nonscalar_raises", ("Tensor.backward",), _nonscalar_backward_raises)
register(__name__, "autograd_grad", ("torch.autograd.grad",), _autograd_grad)
register(__name__, "register_hook", ("Tensor.register_hook",), _register_hook)
register(__name__, "retain_grad", ("Tensor.retain_grad",), _retain_grad)
register(__name__, "requires_grad_detach_", ("Tensor.requires_grad_", "Tensor.detach_", "Tensor.detach"),
         _requires_grad_and_detach_)
register(__name__, "grad_modes", ("torch.is_grad_enabled",), _grad_modes)
register(__name__, "requires_grad_on_int_raises", ("Tensor.requires_grad_",), _grad_of_int_raises)
register(__name__, "backward_through_split_cat_view", ("torch.split", "torch.cat", "Tensor.backward"),
         _backward_through_view_and_cat)
register(__name__, "checkpoint_detach_variable", ("torch.utils.checkpoint.detach_variable",),
         _checkpoint_detach_variable)
