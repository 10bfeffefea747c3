"""The install/undo journal: the primitive changes a registry makes, each recorded so it can be undone.

Every change is a :class:`Record` appended to a journal. Undoing walks the journal backwards and
restores each slot only if it still holds what we put there (someone else's later change is
logged and left alone). Policy lives in the registry and its applier.

Every slot (an attribute of an object, an entry of ``sys.modules``) also keeps, process-wide, the
stack of live records that changed it, whichever registry made them: undoing a record that
another registry's record sits on splices it out of the stack (the one above now restores what
it restored), so registries can be reverted in any order and the original still comes back.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Iterable, Sequence
from operator import attrgetter
from types import FunctionType, ModuleType
from typing import Any, Callable

from .signatures import unwrap_descriptor
from .sites import look_through

__all__ = ["MISSING", "Record", "build_value", "set_attr", "undo", "undo_all", "clear_forwarding_caches",
           "live_records", "make_stub", "evict_module", "discard", "placeholder", "counting_shim", "overwritten_by"]

logger = logging.getLogger(__name__)

MISSING: Any = object()
_MISSING = MISSING
_DESCRIPTORS = (staticmethod, classmethod, property)


class Record:
    """One change made to the interpreter's state.

    kind ``attr``: ``owner.name`` set (``had`` False means it was created, undo deletes it);
    ``getattr``: the same through ``getattr``/``setattr`` on an object that is neither a module nor
    a class (a function's ``__doc__``, a property of an instance): read and restored through the
    protocol that installed it; ``alias``: a module-level binding rebound in ``owner`` (a module
    ``__dict__``); ``module``: ``sys.modules[name]`` replaced; ``stub``: ``sys.modules[name]``
    created; ``evict``: ``sys.modules[name]`` removed by a block.
    """

    __slots__ = ("kind", "owner", "name", "old", "new", "had", "alive", "patch")

    def __init__(self, kind: str, owner: Any, name: str, old: Any, new: Any, had: bool, patch: Any) -> None:
        self.kind = kind
        self.owner = owner
        self.name = name
        self.old = old
        self.new = new
        self.had = had
        self.alive = True
        self.patch = patch
        # onto its slot's stack (see _slot; inlined: a record is made per change, and per alias rebound)
        key = (0 if kind in _MODULE_KINDS else id(owner), name)
        with _stacks_lock:
            stack = _stacks.get(key)
            if stack is None:
                _stacks[key] = [self]
            else:
                stack.append(self)


_MODULE_KINDS = ("stub", "module", "evict")
# slot -> live records that changed it, oldest first, across every registry (see the module docstring)
_stacks: dict[tuple[int, str], list[Record]] = {}
_stacks_lock = threading.Lock()


def _slot(record: Record) -> tuple[int, str]:
    return (0 if record.kind in _MODULE_KINDS else id(record.owner), record.name)


def _pop(record: Record) -> Record | None:
    """Take ``record`` off its slot's stack; return the live record above it, if any."""
    key = _slot(record)
    with _stacks_lock:
        stack = _stacks.get(key)
        if stack is None:
            return None
        index = next((i for i, item in enumerate(stack) if item is record), None)
        if index is None:
            return None
        above = next((item for item in stack[index + 1:] if item.alive), None)
        del stack[index]
        if not stack:
            del _stacks[key]
        return above


def live_records(owner: Any, name: str) -> list[Record]:
    """Return the live records of any registry that changed attribute ``name`` of ``owner``, oldest first."""
    with _stacks_lock:
        return [record for record in _stacks.get((id(owner), name), ()) if record.alive]


def placeholder(target: str, site: str) -> Callable[..., Any]:
    """Return a function that raises ``NotImplementedError`` naming ``target`` when called."""

    def not_implemented(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{target} is a placeholder installed by mindspeed_ms (registered at {site} without an "
            f"implementation); register a real replacement for it")

    not_implemented.__name__ = target.rpartition(".")[2]
    not_implemented.__qualname__ = f"placeholder[{target}]"
    return not_implemented


def counting_shim(func: Any, counter: Any, target: str, log_calls: bool) -> Any:
    """Wrap ``func`` so each call increments ``counter.calls`` (and is logged when asked).

    The shim is a ``wrapt.FunctionWrapper``: a C-level transparent proxy that keeps the name,
    signature, ``__wrapped__`` and method binding of ``func``, which a hand-written closure would not.
    """
    if not callable(func) or isinstance(func, type):
        return func
    import wrapt

    def count(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        counter.calls += 1
        if log_calls:
            logger.info("call into patched %s (call %d)", target, counter.calls)
        return wrapped(*args, **kwargs)

    look_through(count.__code__)  # a registration passing through the shim names its own caller

    class CountingShim(wrapt.FunctionWrapper):  # type: ignore[misc]
        def __reduce_ex__(self, protocol: Any) -> Any:
            return _by_reference(self.__wrapped__, self)

        # copy and deepcopy return a function as is; so does the shim standing for one (wrapt's proxy raised
        # NotImplementedError: megatron's SharedExpertMLP deep-copies a config holding patched functions)
        def __copy__(self) -> Any:
            return self

        def __deepcopy__(self, memo: Any) -> Any:
            return self

    return CountingShim(func, count)


def _by_reference(func: Any, shim: Any) -> tuple[Any, tuple[Any, Any]]:
    """How a counting shim pickles: as pickle writes the function it wraps, a reference to its module and name
    (a patched function sent to another process, e.g. MSAdapter's ``rebuild_tensor`` in every tensor a
    ``DataLoader`` worker sends); a function that cannot be found there cannot be pickled, as with pickle."""
    import pickle

    module, name = getattr(func, "__module__", None), getattr(func, "__qualname__", None)
    try:
        found = resolve_reference(module, name) if module and name else None
    except (ImportError, AttributeError):
        found = None
    if found is not func and found is not shim:
        raise pickle.PicklingError(f"Can't pickle {func!r}: it is not found as {module}.{name}")
    return resolve_reference, (module, name)


def resolve_reference(module: str, qualname: str) -> Any:
    """The object named ``qualname`` in ``module`` (what unpickling a pickled counting shim returns)."""
    return attrgetter(qualname)(importlib.import_module(module))


def build_value(original_raw: Any, replacement: Any, wraps: Sequence[Any],
                shim: Callable[[Any], Any] | None = None, *, target: str | None = None) -> tuple[Any, Any]:
    """Compute the object to install over ``original_raw``.

    The wraps are applied in order (first registered innermost) on top of the replacement, or of
    the original when there is none. The result keeps the original's descriptor kind: a plain
    function replacing a staticmethod is installed as a staticmethod, likewise classmethod; for a
    property it becomes the getter (the setter and deleter are kept). A descriptor given as the
    replacement is installed as is.

    Returns:
        ``(value to install, the plain callable inside it)``.

    Raises:
        PatchApplyError: a wrap returned ``None`` (a wrapper that forgot its ``return``).
        Whatever a wrap raises.
    """
    if type(replacement) is FunctionType and type(original_raw) is FunctionType and not wraps and shim is None:
        return replacement, replacement  # a function over a function, as is (the usual case, told at once)
    if replacement is _MISSING:
        kind_source = original_raw
        func = unwrap_descriptor(original_raw)
    elif isinstance(replacement, _DESCRIPTORS) and not wraps and shim is None:
        return replacement, unwrap_descriptor(replacement)
    else:
        kind_source = replacement if isinstance(replacement, _DESCRIPTORS) else original_raw
        func = unwrap_descriptor(replacement)
    for wrap in wraps:
        wrapped = wrap(func)
        if wrapped is None and func is not None:
            from .errors import PatchApplyError

            name = getattr(wrap, "__qualname__", None) or repr(wrap)
            raise PatchApplyError(f"the wrap {getattr(wrap, '__module__', '?')}.{name} of {target!r} returned None "
                                  f"instead of the wrapped function: a decorator wrapper(fn) must return the "
                                  f"function to install (did it forget 'return'?)", target=target)
        func = wrapped
    if shim is not None:
        func = shim(func)
    if isinstance(func, _DESCRIPTORS):
        return func, unwrap_descriptor(func)
    if isinstance(kind_source, staticmethod):
        return staticmethod(func), func
    if isinstance(kind_source, classmethod):
        return classmethod(func), func
    if isinstance(kind_source, property):
        return property(func, kind_source.fset, kind_source.fdel, kind_source.__doc__), func
    return func, func


def set_attr(journal: list[Record], owner: Any, name: str, value: Any, patch: Any, *, old: Any = _MISSING) -> None:
    """Set ``owner.name = value`` and journal it.

    On a module or a class, ``vars`` tells whether the attribute was owned before (an inherited one
    is deleted again on undo). On any other object the attribute is read and written through
    ``getattr``/``setattr`` (descriptors such as a function's ``__doc__`` or an instance's
    property), and undone the same way. ``old`` forces what undo puts back when the slot is empty
    now but will be filled before anyone else looks (a submodule whose parent attribute Python
    sets right after the hook).
    """
    if isinstance(owner, (type, ModuleType)):
        namespace = owner.__dict__
        had = name in namespace
        previous = namespace[name] if had else old
        kind = "attr"
    else:
        previous = getattr(owner, name, old)
        kind = "getattr"
    if previous is not _MISSING:
        had = True
    setattr(owner, name, value)
    journal.append(Record(kind, owner, name, previous, value, had, patch))


def make_stub(journal: list[Record], fullname: str, patch: Any) -> ModuleType:
    """Create an empty stub module ``fullname`` in ``sys.modules`` and on its parent."""
    module = ModuleType(fullname, f"Stub created by mindspeed_ms (create_dummy=True) for {patch.target}")
    module.__mindspeed_ms_stub__ = True  # type: ignore[attr-defined]  # a marker on a plain module
    # a spec (and an empty package path), as an imported module has: importlib.util.find_spec(name)
    # raises ValueError for a module in sys.modules without one (transformers probes flash_attn so)
    module.__spec__ = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
    module.__path__ = []
    sys.modules[fullname] = module
    journal.append(Record("stub", None, fullname, _MISSING, module, False, patch))
    parent_name, _, leaf = fullname.rpartition(".")
    if parent_name:
        set_attr(journal, sys.modules[parent_name], leaf, module, patch)
    return module


def evict_module(journal: list[Record], name: str, patch: Any) -> None:
    """Remove ``name`` and its submodules from ``sys.modules`` (and from its parent), journaled."""
    prefix = name + "."
    for fullname in sorted((n for n in list(sys.modules) if n == name or n.startswith(prefix)),
                           key=lambda n: -n.count(".")):
        module = sys.modules.pop(fullname)
        journal.append(Record("evict", None, fullname, module, _MISSING, True, patch))
        parent_name, _, leaf = fullname.rpartition(".")
        parent = sys.modules.get(parent_name) if parent_name else None
        if parent is not None and parent.__dict__.get(leaf) is module:
            delattr(parent, leaf)
            journal.append(Record("attr", parent, leaf, module, _MISSING, True, patch))


def discard(record: Record) -> None:
    """Forget ``record`` without undoing it: its slot was overwritten for good (a module re-executed)."""
    record.alive = False
    _pop(record)


def _current(record: Record) -> Any:
    if record.kind in _MODULE_KINDS:
        return sys.modules.get(record.name, _MISSING)
    if record.kind == "getattr":
        return getattr(record.owner, record.name, _MISSING)
    return record.owner.__dict__.get(record.name, _MISSING)


def overwritten_by(record: Record) -> Any:
    """Return what now holds ``record``'s slot if someone else (no live record) put it there, else ``MISSING``.

    A slot holding the value of a live record of any registry (this one, or another stacked on it)
    is not overwritten; a slot that holds anything else, or nothing any more, is.
    """
    if not record.alive or record.kind in ("alias", "evict"):
        return _MISSING
    current = _current(record)
    if current is record.new:
        return _MISSING
    with _stacks_lock:
        stack = list(_stacks.get(_slot(record), ()))
    if any(item.alive and item.new is current for item in stack):
        return _MISSING
    return current if current is not _MISSING else "<deleted>"


def undo(record: Record) -> None:
    """Undo one record, if its slot still holds what it installed.

    When a live record of another journal (another registry) was stacked on this one since, the
    slot is left to it, and it will put back what this record would have.
    """
    if not record.alive:
        return
    record.alive = False
    above = _pop(record)
    if above is not None and above.old is record.new:
        above.old, above.had = record.old, record.had
        return
    current = _current(record)
    if current is not record.new:
        logger.warning("mindspeed_ms: %s was changed by someone else after it was patched; left as is",
                       record.name if record.owner is None else f"{_describe(record.owner)}.{record.name}")
        return
    if record.kind in _MODULE_KINDS:
        if record.old is _MISSING:
            del sys.modules[record.name]
        else:
            sys.modules[record.name] = record.old
    elif record.kind == "alias":
        record.owner.__dict__[record.name] = record.old
    elif record.had:
        setattr(record.owner, record.name, record.old)
    else:
        delattr(record.owner, record.name)


def _describe(owner: Any) -> str:
    return getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None) or repr(owner)


def undo_all(records: Iterable[Record]) -> None:
    """Undo ``records`` in reverse order."""
    for record in reversed(list(records)):
        undo(record)
    clear_forwarding_caches()


def clear_forwarding_caches() -> None:
    """Forget what forwarding modules cached about other modules' attributes (after an install or an undo).

    MSAdapter's ``torch`` (and ``torch.distributed``, ...) are module subclasses whose class-level
    ``__getattr__`` forwards to ``msadapter`` through an ``lru_cache``: once ``torch.full`` was read, a
    patch of ``msadapter.ops.creation.full`` would never be seen through ``torch.full``. Any module
    whose class ``__getattr__`` has ``cache_clear`` gets it called.
    """
    for kind in set(map(type, list(sys.modules.values()))):
        if kind is ModuleType or not issubclass(kind, ModuleType):
            continue
        cache_clear = getattr(vars(kind).get("__getattr__"), "cache_clear", None)
        if callable(cache_clear):
            cache_clear()
