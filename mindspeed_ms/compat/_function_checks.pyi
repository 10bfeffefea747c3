"""Types of the optional C checks of :mod:`mindspeed_ms.compat.function_grads` (``_function_checks.c``)."""

from typing import Any

ABI: int

def inputs(args: tuple[Any, ...], tensor_type: type, /) -> list[Any]:
    """Each of ``args``' ``(_shape, _dtype)`` where it is a ``tensor_type``, else None."""

def versions(saved: Any, /) -> tuple[Any, ...]:
    """Each saved tensor's ``_version`` (None for what has none)."""

def unchanged(saved: Any, versions: Any, /) -> bool:
    """Whether each saved tensor with a recorded version is still at it; False where the Python check decides."""

def passed(inputs: Any, needed: Any, result: Any, /) -> tuple[Any, ...] | None:
    """``checked_gradients``' result where it only passes the gradients on; None where it has more to do."""
