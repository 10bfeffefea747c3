"""Sample inputs and case generation for the OpInfo-style case modules (``conformance/cases/ops_*.py``).

Like :mod:`conformance.harness`, importing this needs no torch: the helpers take the side's ``torch``.
:func:`register` turns one op x one variant into a case ``<module>.<name>`` exactly as ``@case`` would.
"""

from __future__ import annotations

from typing import Any, Callable

from conformance.harness import case, data

#: the view kinds an in-place op is driven through: name -> (base shape, make view from base)
VIEWS: dict[str, tuple[tuple[int, ...], Callable[[Any], Any]]] = {
    "owner": ((3, 4), lambda base: base),
    "view": ((3, 4), lambda base: base.view(2, 6)),
    "slice": ((3, 4), lambda base: base[:, 1:3]),
    "narrow": ((3, 4), lambda base: base.narrow(0, 1, 2)),
    "transpose": ((3, 4), lambda base: base.transpose(0, 1)),
    "select": ((3, 4), lambda base: base.select(0, 1)),
    "view_of_view": ((3, 4), lambda base: base[1:].transpose(0, 1)[1:3]),
}


def tensor(torch: Any, shape: tuple[int, ...], dtype: str = "float32", seed: int = 0, low: float = -2.0,
           high: float = 2.0, requires_grad: bool = False) -> Any:
    """A deterministic tensor of ``shape`` and ``dtype`` (bfloat16: drawn as float32, then cast)."""
    if dtype == "bfloat16":
        out = torch.tensor(data(shape, "float32", seed, low, high)).to(torch.bfloat16)
    else:
        out = torch.tensor(data(shape, dtype, seed, low, high))
    if requires_grad:
        out.requires_grad_(True)
    return out


def noncontiguous(torch: Any, shape: tuple[int, ...], dtype: str = "float32", seed: int = 0, low: float = -2.0,
                  high: float = 2.0) -> Any:
    """A non-contiguous tensor of ``shape``: every other column of a wider tensor."""
    wide = tensor(torch, (*shape[:-1], shape[-1] * 2), dtype, seed, low, high)
    return wide[..., ::2]


def positive(torch: Any, shape: tuple[int, ...], dtype: str = "float32", seed: int = 0) -> Any:
    return tensor(torch, shape, dtype, seed, 0.25, 3.0)


def dtype_of(torch: Any, name: str) -> Any:
    return getattr(torch, name)


def register(module: str, name: str, ops: tuple[str, ...], function: Callable[[Any], Any],
             rtol: float | None = None, atol: float | None = None, exact: bool = False) -> None:
    """Register ``function`` as the case ``<module>.<name>`` exercising ``ops``."""
    function.__name__ = name
    function.__qualname__ = name
    function.__module__ = module
    case(*ops, rtol=rtol, atol=atol, exact=exact)(function)


def grad_of(torch: Any, function: Callable[..., Any], *inputs: Any) -> Any:
    """``function(*inputs)``'s output and the gradient of a weighted sum of it with respect to every input."""
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    out = function(*leaves)
    weights = tensor(torch, tuple(out.shape), "float32", seed=99)
    (out.float() * weights).sum().backward()
    return {"out": out, "grads": [leaf.grad for leaf in leaves]}
