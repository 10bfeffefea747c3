"""Replacements for MSAdapter behaviour that differs from PyTorch on every MindSpore device."""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

from mindspeed_ms.compat.errors import GradDTypeError
from mindspeed_ms.compat.inplace_checks import FLOATING, category
from mindspeed_ms.engine import passthrough

__all__ = ["seed_mindspore_wrapper", "full_dtype_wrapper", "baddbmm_wrapper", "grad_flag_restoring_wrapper",
           "grad_flag_entry_wrapper", "requires_grad_property", "flip_dims_wrapper",
           "restore_grad_flag"]


def seed_mindspore_wrapper(manual_seed: Callable[..., Any]) -> Callable[..., Any]:
    """Make MSAdapter's ``torch.manual_seed`` also seed MindSpore's global RNG (and so NumPy's).

    MSAdapter's ``manual_seed`` only reseeds its default generator. Its ``torch.nn.init`` functions
    draw through ``mindspore.common.initializer`` (NumPy's global RNG) and, off Ascend, its random
    ops draw from MindSpore's global seed, so ``torch.manual_seed(s)`` leaves model initialisation
    and ``torch.randn`` unseeded: two processes with the same seed build different models.

    Args:
        manual_seed: MSAdapter's ``manual_seed``.

    Returns:
        ``manual_seed`` that also calls ``mindspore.set_seed`` with the same seed.
    """

    @functools.wraps(manual_seed)
    def seeded_manual_seed(seed: int) -> Any:
        generator = manual_seed(seed)
        import mindspore

        # mindspore.set_seed accepts 0 <= seed < 2**32 only, while torch takes any 64-bit seed.
        mindspore.set_seed(int(seed) % (1 << 32))
        return generator

    return seeded_manual_seed


def full_dtype_wrapper(full: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``torch.full`` PyTorch's result dtype when none is asked for.

    MSAdapter's ``full((2,), 7.0)`` is int64 on MindSpore's CPU backend (and ``full((2,), True)`` too);
    PyTorch infers it from the fill value: bool, int64, the default float dtype (float32), complex64,
    or a tensor fill value's own dtype. A float32 receive of such a tensor then fails ("Recv failed"),
    and arithmetic silently truncates.

    Args:
        full: MSAdapter's ``full(size, fill_value, *, out=None, dtype=None, ...)``.

    Returns:
        ``full`` that passes the inferred ``dtype`` when the caller gave none.
    """

    @functools.wraps(full)
    def full_with_pytorch_dtype(size: Any, fill_value: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        if dtype is None:
            import torch

            if isinstance(fill_value, bool):
                dtype = torch.bool
            elif isinstance(fill_value, int):
                dtype = torch.int64
            elif isinstance(fill_value, float):
                dtype = torch.get_default_dtype()
            elif isinstance(fill_value, complex):
                dtype = torch.complex64
            else:
                dtype = getattr(fill_value, "dtype", None)  # a 0-d tensor or NumPy scalar keeps its own
        return full(size, fill_value, *args, dtype=dtype, **kwargs)

    return full_with_pytorch_dtype


def _ignores_input(beta: Any) -> bool:
    return isinstance(beta, (int, float)) and not isinstance(beta, bool) and beta == 0


def baddbmm_wrapper(baddbmm: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``baddbmm(input, batch1, batch2, beta=0)`` ignore ``input`` as PyTorch does.

    PyTorch documents that with ``beta=0`` ``input`` is ignored: ``nan`` and ``inf`` in it are not
    propagated. MSAdapter computes ``beta * input + alpha * batch1 @ batch2``, so ``0 * nan`` makes the whole
    result NaN. megatron-core's ``DotProductAttention`` passes an uninitialised ``torch.empty`` buffer with
    ``beta=0.0``: a silent NaN loss whenever that memory holds NaN/Inf.

    Args:
        baddbmm: MSAdapter's ``torch.baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None)`` or the
            tensor method ``Tensor.baddbmm(self, batch1, batch2, *, beta=1, alpha=1)``.

    Returns:
        ``baddbmm`` that computes ``alpha * batch1 @ batch2`` when ``beta == 0`` (``input`` still has to
        broadcast to the product's shape, as in PyTorch).
    """

    @functools.wraps(baddbmm)
    def baddbmm_ignoring_input(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1,
                               **kwargs: Any) -> Any:
        if not _ignores_input(beta):
            return baddbmm(input, batch1, batch2, beta=beta, alpha=alpha, **kwargs)
        import mindspore
        from mindspore import ops

        product = ops.bmm(batch1, batch2)
        try:
            ops.broadcast_to(input, tuple(product.shape)) if tuple(input.shape) != tuple(product.shape) else None
        except (ValueError, RuntimeError) as error:
            raise ValueError(f"baddbmm: input of shape {tuple(input.shape)} does not broadcast to the product's "
                             f"shape {tuple(product.shape)}") from error
        if not (isinstance(alpha, (int, float)) and alpha == 1):
            product = ops.mul(product, alpha)
        if getattr(input, "requires_grad", False):  # PyTorch's gradient for input: beta * g, zeros (not None)
            product = ops.where(ops.ones(tuple(product.shape), mindspore.bool_), product, input)
        out = kwargs.get("out")
        if out is not None:
            out.copy_(product)
            return out
        return product

    return baddbmm_ignoring_input


def restore_grad_flag() -> None:
    """Switch MindSpore's PyNative ``grad_flag`` back on if an error switched it off.

    MSAdapter switches the flag on once, when it is imported, and never off: PyTorch-style autograd records
    ops only while it is on. MindSpore's executor clears it whenever an op fails while converting its
    arguments or inferring its output (``index_add`` with int64 indices, ``x.flip(0)``, ``x.reshape("a")``):
    every later op goes unrecorded and every ``backward()`` fails, and ``torch.enable_grad()`` (which sets
    another flag) does not bring it back. The graph recorded so far survives; only the flag is lost.
    """
    executor = _executor()
    if not executor.grad_flag():
        executor.set_grad_flag(True)


@functools.lru_cache(maxsize=1)
def _executor() -> Any:
    from mindspore.common.api import _pynative_executor

    return _pynative_executor


def grad_flag_restoring_wrapper(run_op: Callable[..., Any]) -> Callable[..., Any]:
    """Keep autograd on after a primitive fails in MindSpore's PyNative executor (see :func:`restore_grad_flag`).

    Args:
        run_op: ``_PyNativeExecutor.run_op_async`` or ``real_run_op`` (every primitive runs through one).

    Returns:
        ``run_op`` that switches the flag back on when the op raises, and re-raises.
    """
    return passthrough.guard(run_op, catch=BaseException, on_error=_flag_restored)


def _flag_restored(error: BaseException) -> Any:
    """Restore the grad flag after ``error`` (being handled), and re-raise it."""
    restore_grad_flag()
    raise error


def grad_flag_entry_wrapper(entry: Callable[..., Any]) -> Callable[..., Any]:
    """Switch the grad flag back on before ``entry`` runs (see :func:`restore_grad_flag`).

    A pyboost op or a Tensor method implemented in C++ that fails clears the flag without passing through
    any Python code of MindSpore's; the flag is put back at the points where autograd matters next: a
    module's forward, ``backward``/``autograd.grad``, ``enable_grad``/``set_grad_enabled``, and
    ``is_grad_enabled``.

    Args:
        entry: the function or method to guard.

    Returns:
        ``entry`` that first restores the flag (one flag read when nothing failed).
    """
    # the C++ executor's own flag methods (MindSpore's Python ``grad_flag`` calls the same): no Python frame per
    # call where the C wrappers are built (this runs on every module call)
    flags = _executor()._executor
    return passthrough.guard(entry, check=flags.grad_flag, fix=functools.partial(flags.set_grad_flag, True))


def _set_requires_grad(self: Any, value: Any = True) -> None:
    if not isinstance(value, bool):
        raise TypeError("The argument `requires_grad` must be bool type")
    if value:
        if category(self) < FLOATING:  # PyTorch's refusal (MSAdapter's setter accepted an integer tensor)
            raise GradDTypeError(str(self.dtype))
        restore_grad_flag()
    self._requires_grad = value


#: ``Tensor.requires_grad`` as MSAdapter defines it, except that making a tensor require grad (``torch.ones(2,
#: requires_grad=True)``, ``x.requires_grad_()``, a new ``Parameter``) switches the grad flag back on
#: (:func:`restore_grad_flag`): the tensor's ops would not be recorded otherwise.
#: The getter is MindSpore's own attribute read (``operator.attrgetter``, no Python frame): it runs for every
#: ``requires_grad`` read, hundreds a step.
requires_grad_property = property(operator.attrgetter("_requires_grad"), _set_requires_grad,
                                  doc="Whether autograd records this tensor's ops.")


def flip_dims_wrapper(flip: Callable[..., Any]) -> Callable[..., Any]:
    """Accept ``Tensor.flip``'s dimensions as PyTorch does: ``x.flip(0)``, ``x.flip(0, 1)``, ``x.flip([0])``.

    MindSpore's ``Tensor.flip`` takes one tuple or list and fails on an int while converting its argument
    ("Failed calling ReverseV2"), a failure that also switched autograd off.

    Args:
        flip: ``Tensor.flip(self, dims)``.

    Returns:
        ``flip(self, *dims)``.
    """

    @functools.wraps(flip)
    def flip_any_dims(self: Any, *dims: Any, **kwargs: Any) -> Any:
        if "dims" in kwargs:
            dims = (kwargs.pop("dims"),)
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        return flip(self, tuple(int(d) for d in dims), **kwargs)

    return flip_any_dims
