"""The alias pass: rebind ``from owner import f`` copies of patched module-level targets, and put them back.

After a batch is installed, every module-level binding still holding one of the originals under the
target's name (``from owner import f`` ran before the patch) is rebound to what was installed, in one
pass over ``sys.modules``; after a revert, the mirror pass puts the originals back.

Finding those bindings means looking at every binding of every imported module (~175k in a large
training process) for a handful of originals, by identity. The C accelerator
(``mindspeed_ms.engine._identity``, built by ``pip install`` when a compiler is there) does it with no
allocation and no code of any binding run; without it, a pure-Python pass does the filtering in C
builtins over whole namespaces (a set of names, the ``id`` of each value) with the same results.
Either way only module ``__dict__``s are read (never a module's ``__getattr__``, nor any binding's
``__eq__``/``__hash__``), and Python work is done only where a binding really holds an original.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import compress, repeat
from operator import attrgetter, itemgetter, not_
from types import ModuleType
from typing import Any, Callable

from .journal import MISSING, Record, clear_forwarding_caches
from .signatures import unwrap_descriptor

#: ``(module name, module, binding name, index of the original)``: one binding found holding an original.
_Hit = tuple[str, ModuleType, str, int]

_compiled_find: Callable[[Mapping[str, Any], Sequence[Any]], list[_Hit]] | None
try:
    from ._identity import find_bindings as _compiled_find
except ImportError:  # not built (no compiler at install, a free-threaded Python): the pure-Python pass runs
    _compiled_find = None

__all__ = ["AliasEntry", "rebind_aliases", "restore_aliases", "is_identity_meaningful", "has_accelerator",
           "is_accelerated", "accelerator"]

#: ``(binding name, original, replacement, record, modules left alone)``: one target for the alias pass (a
#: module left alone with a trailing dot leaves its package alone).
AliasEntry = tuple[str, Any, Any, Any, Collection[str]]

# Whether the pass uses the accelerator; changed only through accelerator() (tests run both passes).
_use_compiled = _compiled_find is not None


def has_accelerator() -> bool:
    """Tell whether the C accelerator of the alias pass was built and imports."""
    return _compiled_find is not None


def is_accelerated() -> bool:
    """Tell whether the alias pass runs in C now (see :func:`accelerator`)."""
    return _use_compiled


@contextmanager
def accelerator(enabled: bool) -> Iterator[None]:
    """Run the alias pass with (``True``) or without (``False``) the C accelerator inside the block.

    For comparing the two passes (tests, benchmarks); not thread-safe: it switches the process's pass.

    Raises:
        ModuleNotFoundError: ``enabled`` but the accelerator was not built (reinstall with a C compiler).
    """
    global _use_compiled
    if enabled and _compiled_find is None:
        raise ModuleNotFoundError("mindspeed_ms.engine._identity (the alias pass's C accelerator) was not built: "
                                  "reinstall mindspeed_ms where a C compiler and the Python headers are available",
                                  name="mindspeed_ms.engine._identity")
    previous, _use_compiled = _use_compiled, enabled
    try:
        yield
    finally:
        _use_compiled = previous


def is_identity_meaningful(value: Any) -> bool:
    """Tell whether ``value``'s identity can stand for "the original" when hunting aliases."""
    return not (value is None or isinstance(value, (bool, int, float, complex, str, bytes)))


def rebind_aliases(journal: list[Record], entries: Sequence[AliasEntry], *, journaled: bool = True) -> None:
    """Rebind module-level ``name = original`` bindings to the replacement, in one pass.

    Args:
        journal: where the rebinding records go.
        entries: what to rebind (see :data:`AliasEntry`); when two share a name and an original, the
            first wins.
        journaled: record the rebinding (False when putting originals back: nothing to undo then).
    """
    if not entries:
        clear_forwarding_caches()
        return
    groups: dict[int, list[AliasEntry]] = {}
    taken: set[tuple[int, str]] = set()
    for entry in entries:
        pair = (id(entry[1]), entry[0])
        if pair not in taken:
            taken.add(pair)
            groups.setdefault(pair[0], []).append(entry)
    wanted = list(groups.values())
    originals = [same[0][1] for same in wanted]
    searched = len(originals)
    if journaled:  # also the bindings holding a replacement already (imported from its own module): see below
        held: dict[int, list[AliasEntry]] = {}
        for entry in entries:
            if is_identity_meaningful(entry[2]) and id(entry[2]) not in groups:
                held.setdefault(id(entry[2]), []).append(entry)
        wanted += held.values()
        originals += [same[0][2] for same in held.values()]
    modules = sys.modules
    # the accelerator reads a dict's table: sys.modules replaced by another mapping is read by the Python pass
    hits = (_compiled_find(modules, originals) if _use_compiled and _compiled_find is not None
            and isinstance(modules, dict) else list(_find_in_python(originals, wanted)))
    for module_name, module, key, index in hits:
        if index >= searched:
            # held the replacement before any rebinding of this pass (its own ``from home import f``): the revert's
            # mirror pass must leave it alone, as it found it
            for entry in wanted[index]:
                if entry[0] == key:
                    entry[3].held_aliases.append(module_name)
            continue
        package = module_name.partition(".")[0] + "." if "." in module_name else None
        for name, original, replacement, patch, skip in wanted[index]:
            # key is exactly a str (the accelerator reports no other): no user __eq__ runs here; a module
            # left alone with a trailing dot leaves its package alone
            if name != key or module_name in skip or package in skip:
                continue
            _namespace(module)[name] = replacement
            if journaled:
                journal.append(Record("alias", module, name, original, replacement, True, patch))
                patch.aliases.append(module_name)
    clear_forwarding_caches()


def _find_in_python(originals: list[Any], wanted: list[list[AliasEntry]]) -> Iterator[_Hit]:
    """The pure-Python pass: yield the bindings holding an original under one of its wanted names.

    Only modules that bind a wanted name are looked at, and only those holding an original by
    identity are probed further; both tests run in C builtins over whole namespaces.
    """
    items = list(sys.modules.items())
    # type() and issubclass on it run no code of the object (isinstance may read a __class__ property)
    pairs = list(compress(items, map(issubclass, map(type, map(_second, items)), repeat(ModuleType))))
    namespaces: list[dict[str, Any]] = list(map(_namespace, map(_second, pairs)))
    # An exact set (not a frozenset): CPython's dict-view operations only take their fast path with one.
    names = {entry[0] for same in wanted for entry in same}
    index_of = {id(original): index for index, original in enumerate(originals)}
    ids = set(index_of)
    # 1. bind a wanted name at all (dict_keys.isdisjoint iterates the smaller side and stops at a hit)
    binds = list(map(_keys_isdisjoint, map(dict.keys, namespaces), repeat(names)))
    candidates = list(compress(zip(pairs, namespaces), map(not_, binds)))
    # 2. hold an original by identity: the ids of their values against the originals' ids (one set per
    # module). A module much bigger than the set of wanted names is probed for those names only (its
    # other bindings are never touched); a smaller one has all its values looked at.
    names_tuple = tuple(names)
    probe = list(map((2 * len(names_tuple)).__lt__, map(len, map(_second, candidates))))
    probed = list(compress(candidates, probe))
    scanned = list(compress(candidates, map(not_, probe)))
    wanted_values = map(map, map(_get, map(_second, probed)), repeat(names_tuple))
    all_values = map(dict.values, map(_second, scanned))
    for members, values in ((probed, wanted_values), (scanned, all_values)):
        held = list(map(ids.intersection, map(map, repeat(id), values)))
        for ((module_name, module), namespace), identities in compress(zip(members, held), held):
            for index in sorted(map(index_of.__getitem__, identities)):
                for entry in wanted[index]:
                    if namespace.get(entry[0], MISSING) is originals[index]:
                        yield module_name, module, entry[0], index


_keys_isdisjoint: Callable[[Any, Any], bool] = type({}.keys()).isdisjoint
_second = itemgetter(1)
_get = attrgetter("get")
#: a module's own namespace, read through ModuleType's slot: no subclass's __dict__ or __getattribute__ runs
_namespace: Callable[[ModuleType], dict[str, Any]] = vars(ModuleType)["__dict__"].__get__


def restore_aliases(records: Sequence[Record]) -> None:
    """After ``records`` were undone: rebind module-level names still bound to what they installed.

    ``from mod import f`` run while a patch was applied binds the replacement in a module the
    journal never saw; this pass (the mirror of :func:`rebind_aliases`) puts the original back there
    too. The owner, the modules of the replacement's own top-level package (which define or
    re-export it) and the modules that held the replacement before it was applied (``from home
    import f`` of its own, noted by :func:`rebind_aliases`) are left alone.
    """
    entries: list[AliasEntry] = []
    first_old: dict[tuple[int, str], Any] = {}
    for record in records:
        if record.kind not in ("attr", "module") or not (record.kind == "module" or
                                                         isinstance(record.owner, ModuleType)):
            continue
        key = (id(record.owner), record.name)
        first_old.setdefault(key, record.old)
        original = first_old[key]
        if original is MISSING or not is_identity_meaningful(record.new):
            continue
        # Modules of the replacement's own top-level package re-export it on purpose (``from
        # .impl import f`` in a package __init__): those bindings are theirs, not copies of the target.
        # A wrap made with functools.wraps carries the original's __module__: its package is the target's own,
        # whose late from-imports are copies of the target to restore, not re-exports of the replacement.
        home = (getattr(unwrap_descriptor(record.new), "__module__", None) or "").partition(".")[0]
        if home and home == (getattr(unwrap_descriptor(original), "__module__", None) or "").partition(".")[0]:
            home = ""
        # and the modules that already held the replacement when it was applied (rebind_aliases noted them)
        held = getattr(record.patch, "held_aliases", ())
        skip = frozenset({home, home + ".", getattr(record.owner, "__name__", "") if record.owner is not None else "",
                          *held})
        entries.append((record.name.rpartition(".")[2], record.new, original, None, skip))
    if entries:
        rebind_aliases([], entries, journaled=False)
