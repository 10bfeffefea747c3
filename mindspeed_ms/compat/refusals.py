"""Refusals under PyTorch's exception classes: a call both refuse raises what PyTorch's caller catches.

MindSpore validates shapes, dimensions and indices itself and raises ValueError (a shape that cannot be viewed,
tensors that do not broadcast, a concat of mismatched shapes), ValueError or RuntimeError for an index out of
range, TypeError for a dtype without a kernel; PyTorch raises RuntimeError for the first and IndexError for the
second. Code written for PyTorch (``except RuntimeError``, ``except IndexError``) missed ours. Each wrapper here
runs the op untouched and, only when it raises, re-raises the error as one of
:class:`~mindspeed_ms.compat.errors.OpRefusedError`'s subclasses: PyTorch's class, still MindSpore's, the
original as ``__cause__``. Our own typed errors pass through unchanged.

A failing op also leaves MindSpore's grad flag off (its executor clears it when an argument does not convert:
``x.reshape("a")``, ``x * "a"``), so ops right after the refusal went unrecorded until the next module call or
``backward`` put it back (:mod:`mindspeed_ms.compat.msadapter`); these wrappers put it back at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Callable

from mindspeed_ms.compat.errors import (
    OpIndexRefusedError,
    OpLookupRefusedError,
    OpRefusedError,
    OpShapeRefusedError,
    OpTypeRefusedError,
    OpValueRefusedError,
)
from mindspeed_ms.compat.msadapter import restore_grad_flag
from mindspeed_ms.engine import passthrough
from mindspeed_ms.engine.errors import AdaptationError

__all__ = ["REFUSALS", "INDEX", "RUNTIME", "VALUE", "DIM", "refusal_class_wrapper", "translate"]

RUNTIME, INDEX, VALUE, DIM = "RuntimeError", "IndexError", "ValueError", "dim"
#: how MindSpore words an index or dimension out of range (``DIM`` ops: PyTorch's IndexError for those only)
_OUT_OF_RANGE = re.compile(r"out of range|out of bounds|exceed range|should be in the range|must be in \[|"
                           r"axis (value )?must be in")
#: how MindSpore words index tensors that do not broadcast together (``x[a, b]``; PyTorch: IndexError "shape
#: mismatch: indexing tensors could not be broadcast together")
_UNBROADCAST_INDICES = re.compile(r"tensor getitem.*need to broadcast")

#: op -> PyTorch's class for its refusals: RUNTIME, INDEX, VALUE, or DIM (IndexError when out of range, else
#: RuntimeError); tests/conformance/cases/ops_errors.py holds one refusal of each
REFUSALS: Mapping[str, str] = MappingProxyType({
    "Tensor.view": RUNTIME, "Tensor.reshape": RUNTIME, "Tensor.permute": RUNTIME, "Tensor.expand": RUNTIME,
    "Tensor.narrow": RUNTIME, "Tensor.item": RUNTIME, "Tensor.to": RUNTIME, "Tensor.neg": RUNTIME,
    "Tensor.__neg__": RUNTIME, "Tensor.__add__": RUNTIME, "Tensor.__mul__": RUNTIME, "Tensor.add": RUNTIME,
    "Tensor.mul": RUNTIME, "torch.cat": RUNTIME, "torch.stack": RUNTIME, "torch.split": RUNTIME,
    "torch.chunk": RUNTIME, "torch.arange": RUNTIME, "torch.zeros": RUNTIME, "torch.neg": RUNTIME,
    "torch.randn": RUNTIME, "torch.nn.functional.linear": RUNTIME, "torch.nn.functional.layer_norm": RUNTIME,
    "Tensor.transpose": DIM, "Tensor.unsqueeze": DIM, "Tensor.select": INDEX, "Tensor.sum": DIM,
    "Tensor.index_select": DIM, "Tensor.__getitem__": DIM, "torch.nn.functional.embedding": DIM,
    "torch.nn.functional.softmax": DIM, "torch.tensor": VALUE,
    "torch.distributed.get_process_group_ranks": VALUE, "torch.bincount": RUNTIME,
})


#: the classes MindSpore refuses with (others, e.g. our own errors' other bases, pass through untouched)
_CAUGHT = (ValueError, TypeError, RuntimeError, KeyError)


def translate(op: str, error: Exception) -> Exception:
    """Return ``error`` (raised by ``op``) as PyTorch's class for that refusal, or ``error`` itself when it is ours
    already or PyTorch raises the same class."""
    if isinstance(error, AdaptationError):
        return error
    rule = REFUSALS.get(op, RUNTIME)
    if rule == DIM:
        message = str(error)
        rule = INDEX if _OUT_OF_RANGE.search(message) or _UNBROADCAST_INDICES.search(message) else RUNTIME
    if rule == INDEX:
        return error if isinstance(error, IndexError) else OpIndexRefusedError(op, error)
    if rule == VALUE:
        return error if isinstance(error, ValueError) else OpValueRefusedError(op, error)
    if isinstance(error, RuntimeError):
        return error
    for builtin, refused in ((ValueError, OpShapeRefusedError), (TypeError, OpTypeRefusedError),
                             (KeyError, OpLookupRefusedError)):
        if isinstance(error, builtin):
            return refused(op, error)
    return OpRefusedError(op, error)


def refusal_class_wrapper(op_name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Return a wrapper that re-raises ``op_name``'s refusals under PyTorch's class (:func:`translate`).

    Args:
        op_name: the torch API name, a key of :data:`REFUSALS`.
    """

    def refused(error: BaseException) -> Any:
        # called while ``error`` is being handled (as in an ``except`` block): what it raises has it as context
        restore_grad_flag()  # MindSpore's executor switched autograd off when the op failed
        translated = translate(op_name, error)  # type: ignore[arg-type]  # one of _CAUGHT: an Exception
        if translated is error:
            raise error
        raise translated from error

    def wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
        # no Python frame on a call that succeeds where the C wrappers are built (hundreds of calls a step)
        return passthrough.guard(op, catch=_CAUGHT, on_error=refused)

    return wrapper
