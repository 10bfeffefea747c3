"""Which registry is being filled: the innermost provider/transaction block's, per context.

A :meth:`~mindspeed_ms.engine.registry.PatchRegistry.provider` or
:meth:`~mindspeed_ms.engine.registry.PatchRegistry.transaction` block (or :func:`filling`) makes its
registry the one :func:`registry_being_filled` returns, so registration spellings that do not take a
registry (``MindSporeAdaptation.register``, MindSpeed's manager facade) fill the one a provider was
handed. The value is a :class:`~contextvars.ContextVar`: a thread, or an asyncio task, started
elsewhere does not see another's block.

This module imports nothing of the engine: asking "which registry?" loads no registry.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from .registry import PatchRegistry

__all__ = ["filling", "registry_being_filled"]

_being_filled: ContextVar[PatchRegistry | None] = ContextVar("mindspeed_ms_registry_being_filled", default=None)


def registry_being_filled() -> PatchRegistry | None:
    """Return the registry being filled in this context right now (the innermost block's), or ``None``.

    ``MindSporeAdaptation.register`` and the MindSpeed manager facade use it, so a provider that
    registers through those spellings fills the registry it was handed (the one ``mindspeed-ms
    patches``/``verify`` list). Inside :meth:`PatchRegistry.provider`, :meth:`PatchRegistry.transaction`
    or :func:`filling` it is that block's registry; other threads and contexts do not see it.
    """
    return _being_filled.get()


@contextmanager
def filling(registry: PatchRegistry) -> Iterator[PatchRegistry]:
    """Make ``registry`` the one :func:`registry_being_filled` returns in this context, for the block.

    Blocks nest (the innermost wins, the outer one is back on exit). Registrations made inside are
    not attributed or rolled back by this alone: :meth:`PatchRegistry.provider` does that (and
    enters this block itself).
    """
    token = _being_filled.set(registry)
    try:
        yield registry
    finally:
        _being_filled.reset(token)
