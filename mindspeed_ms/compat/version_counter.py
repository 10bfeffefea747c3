"""Version counters for the writes MindSpore does not count: through views, and ``t[index] = value``.

PyTorch counts every in-place write in a counter that a view shares with its base (``tensor._version``); a
backward that reads a tensor saved in the forward compares its count then with the count it saved, and refuses
a tensor written since ("one of the variables needed for gradient computation has been modified by an inplace
operation"). MindSpore keeps such a counter too, shared by views made by its view ops, and its backward makes the
same check, but on its CPU backend the writes that reach a view's memory through the host (:mod:`.inplace`'s
write-back, MindSpore's kernels not landing in a view) and ``Tensor.__setitem__`` count nothing: the backward then
read the overwritten values and returned wrong gradients silently, where PyTorch raises (``a = x * 1; z = a * w;
a[0] = 5.0; z.sum().backward()``: ``w.grad``'s first row 5, PyTorch's error).

:func:`bump_version` counts one write the way MindSpore's own in-place kernels count theirs: its ``InplaceCopy``
of a tensor onto itself (no copy: the kernel returns at once for the same memory; ~20 us a call) bumps the
counter of a tensor that owns its memory, and so of every view sharing it. A view is counted through the tensor
that owns its memory, found through MSAdapter's ``_base`` (``view``/``reshape``) or MindSpore's ``parent_tensor_``
(slices, ``narrow``, ``unsqueeze``, chains of them). Views whose owner neither names (``select``, the pieces of
``chunk``/``split``/``unbind``, ``as_strided``) cannot be counted: :func:`bump_version` returns False for them, and
a backward reading one of their bases after such a write still reads the new values (README, "Version counters").
Nor are writes into a buffer that parameters alias through ``.data`` (:data:`ALIASED_BY_DATA`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from mindspeed_ms.compat.inplace_checks import records_grad

__all__ = ["ALIASED_BY_DATA", "bump_version", "mark_aliased_by_data", "memory_owner"]

#: Set on a tensor whose memory a parameter's ``.data`` was set to a view of (megatron's DDP and distributed
#: optimizer: ``param.data = buffer[start:end].view(shape)``). In PyTorch the parameter keeps a counter of its own,
#: and writes into the buffer (the distributed optimizer's parameter all-gather, bucket by bucket during a forward
#: with ``--overlap-param-gather``) do not reach it; in MindSpore the parameter then shares the buffer's counter, so a
#: count made on the buffer would make a backward refuse the parameters it saved earlier in that forward. Writes into
#: such a buffer are not counted.
ALIASED_BY_DATA = "_mindspeed_ms_aliased_by_data"

#: views of views are followed this deep at most (a chain longer than any layer makes)
_MAX_CHAIN = 64


@functools.lru_cache(maxsize=1)
def _inplace_copy() -> Callable[[Any, Any], Any]:
    from mindspore.ops.auto_generate.gen_ops_prim import inplace_copy_op

    return inplace_copy_op  # type: ignore[no-any-return]


def memory_owner(tensor: Any) -> Any:
    """The tensor that owns ``tensor``'s memory (``tensor`` itself where it is not a view), or None where a view
    names no owner (see the module's docstring)."""
    for _ in range(_MAX_CHAIN):
        above = getattr(tensor, "_base", None)
        if above is None:
            above = getattr(tensor, "parent_tensor_", None)
        if above is None:
            offset = getattr(tensor, "storage_offset", None)
            return tensor if offset is None or offset() == 0 else None
        tensor = above
    return None


def mark_aliased_by_data(view: Any) -> None:
    """Mark the owner of ``view``'s memory :data:`ALIASED_BY_DATA` (``param.data = view`` is being set)."""
    owner = memory_owner(view)
    if owner is not None:
        setattr(owner, ALIASED_BY_DATA, True)


def bump_version(tensor: Any) -> bool:
    """Count one in-place write into ``tensor`` in the version counter it shares with its base and views.

    Args:
        tensor: a MindSpore tensor just written (or about to be, by an op that gives it new memory).

    Returns:
        True where the count was made; False where ``tensor`` is a view that names no owner of its memory, its memory
        is a buffer parameters alias (:data:`ALIASED_BY_DATA`), or it is not a MindSpore tensor (nothing is counted
        then).
    """
    owner = memory_owner(tensor)
    if owner is None or not hasattr(owner, "_version") or getattr(owner, ALIASED_BY_DATA, False):
        return False
    before = owner._version
    if records_grad(owner):  # the copy onto itself must not enter autograd's record
        import msadapter

        with msadapter.no_grad():
            _inplace_copy()(owner, owner)
    else:
        _inplace_copy()(owner, owner)
    return bool(owner._version != before)  # a view at offset 0 that names no owner: MindSpore counted nothing
