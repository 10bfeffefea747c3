"""Resolve a patch's target and install it there, journaling every change: the engine's one install path.

:func:`resolve` finds where a target stands now (creating ``create_dummy`` stubs on the way);
:func:`install` builds what goes there and puts it in, each change a journal
:class:`~mindspeed_ms.engine.journal.Record`. The applier calls both, for a batch and on import
alike, and records the outcome; nothing here imports a target's module or knows about registries.
"""

from __future__ import annotations

import sys
from types import FunctionType, ModuleType
from typing import Any, Callable

from .aliases import AliasEntry, is_identity_meaningful
from .errors import PatchApplyError, SignatureMismatchError, TargetNotFoundError
from .journal import (
    MISSING,
    Record,
    build_value,
    counting_shim,
    live_records,
    make_stub,
    placeholder,
    set_attr,
    undo_all,
)
from .patch_record import PatchRecord
from .replacements import NO_REPLACEMENT, is_reference, qualified_name, resolve_reference
from .signatures import signature_problems, unwrap_descriptor
from .targets import Located, locate, not_found, top_level_exists

__all__ = ["resolve", "install", "install_dummy_module", "is_dummy_module", "stub_chain"]

#: Is ``other`` a patch of the same registry registered after ``patch``? ``later(patch, other)`` (see :func:`install`)
Later = Callable[[PatchRecord, Any], bool]


def is_dummy_module(patch: PatchRecord) -> bool:
    """Tell whether ``patch`` only asks for a top-level module to exist (``create_dummy`` with nothing to install)."""
    return len(patch.parts) == 1 and patch.create_dummy and patch.active_replacement in (None, NO_REPLACEMENT) \
        and not patch.active_wraps


def install_dummy_module(patch: PatchRecord, journal: list[Record], is_blocked: Callable[[str], bool]) -> Record | None:
    """MindSpeed's ``register_patch('fused_layer_norm_cuda', create_dummy=True)``: an importable stub module.

    The module is created empty when it is neither imported nor installed (a blocked one counts as
    not installed); an existing one is left as it is.

    Returns:
        The stub's record, or ``None`` when the module exists.
    """
    name = patch.target
    if name in sys.modules or (not is_blocked(name) and top_level_exists(name)):
        return None
    records: list[Record] = []
    make_stub(records, name, patch)
    patch.stub = True
    patch.records.extend(records)
    journal.extend(records)
    return records[0]


def resolve(patch: PatchRecord, journal: list[Record], is_blocked: Callable[[str], bool]) -> Located:
    """Find where ``patch``'s target stands now, importing nothing.

    With ``create_dummy``, the missing part of the path is created as stub modules (journaled) and a
    module hidden by a block counts as missing: MindSpeed registers ``transformer_engine.pytorch.*``
    so when TE is not installed, and waiting for an import the block refuses would wait forever.

    Raises:
        TargetNotFoundError: a part of the path does not exist (and ``create_dummy`` is off).
    """
    try:
        located = locate(patch.target, patch.parts)
        if patch.create_dummy and located.waiting_for is not None:
            hidden = _blocked_prefix(patch, is_blocked)
            if hidden is not None:
                raise hidden
    except TargetNotFoundError as error:
        if not patch.create_dummy:
            raise
        located = stub_chain(patch, error, journal)
    return located


def _blocked_prefix(patch: PatchRecord, is_blocked: Callable[[str], bool]) -> TargetNotFoundError | None:
    """For a target under a blocked module that is not imported: the not-found error stubs start from."""
    parts = patch.parts
    for position in range(len(parts)):
        name = ".".join(parts[: position + 1])
        if name in sys.modules:
            continue
        if not is_blocked(name):
            return None
        owner = sys.modules.get(".".join(parts[:position])) if position else None
        if position and owner is None:
            return None
        return not_found(patch.target, parts, position, owner)
    return None


def stub_chain(patch: PatchRecord, error: TargetNotFoundError, journal: list[Record]) -> Located:
    """Create stub modules for the missing part of ``patch.target`` (``create_dummy=True``)."""
    parts = patch.parts
    start = len(error.resolved.split(".")) if error.resolved else 0
    if error.resolved and not isinstance(sys.modules.get(error.resolved), ModuleType) and start < len(parts) - 1:
        raise TargetNotFoundError(
            f"cannot create {patch.target!r} with create_dummy=True: {error.resolved!r} is not a module, and "
            f"create_dummy creates missing modules and the last attribute only, not {parts[start]!r} inside "
            f"it; register a replacement for {error.resolved + '.' + parts[start]!r} instead",
            target=patch.target, resolved=error.resolved, missing=parts[start])
    for index in range(start, len(parts) - 1):
        fullname = ".".join(parts[:index + 1])
        existing = sys.modules.get(fullname)
        if existing is None:
            make_stub(journal, fullname, patch)
        elif not isinstance(existing, ModuleType):
            raise error
    owner = sys.modules[".".join(parts[:-1])] if len(parts) > 1 else None
    patch.stub = True
    return Located(patch.target, module_name=".".join(parts[:-1]), owner=owner, name=parts[-1])


def _inherited(patch: PatchRecord, owner: type, defined_on: type, name: str, raw: Any, later: Later | None
               ) -> tuple[Any, bool]:
    """Return what ``owner`` inherits as ``name`` from ``defined_on``, seen from before patches registered later.

    MindSpeed applies patches in registration order: ``Parameter.type`` registered before
    ``Tensor.type`` wraps the original ``Tensor.type``. Applied lazily (the subclass's module imported
    later), the base may already hold a patch registered *after* this one: what it installed is looked
    through, so the subclass is not wrapped twice. A base patched by an earlier registration (or by
    another registry) is what the subclass inherits, as in MindSpeed.
    """
    if later is None:
        return raw, True
    mro = owner.__mro__
    while True:
        record = next((r for r in live_records(defined_on, name) if r.new is raw and r.kind == "attr"), None)
        if record is None or not later(patch, record.patch):
            return raw, True
        if record.old is not MISSING:
            raw = record.old
            continue
        # that patch created the attribute on the base: it was inherited from further up
        position = mro.index(defined_on) if defined_on in mro else len(mro)
        base = next((b for b in mro[position + 1:] if name in vars(b)), None)
        if base is None:
            return MISSING, False
        defined_on, raw = base, vars(base)[name]


def _original(patch: PatchRecord, located: Located, later: Later | None) -> tuple[Any, bool]:
    """Return ``(raw original, whether it exists)``: from the patch's first live record if installed.

    Re-installing a changed patch builds on the true original, kept in its first record; the new
    records then chain on top of the old ones, so revert (and rollback) stay exact.
    """
    for record in patch.records:
        if not record.alive:
            continue
        if (record.kind in ("attr", "getattr") and record.owner is located.owner and record.name == located.name) or \
                (record.kind == "module" and located.is_module and record.name == located.module_name):
            if record.old is MISSING and isinstance(record.owner, type):
                # patched on a subclass that inherited it: the original is what the bases provide
                for base in record.owner.__mro__[1:]:
                    if record.name in vars(base):
                        return _inherited(patch, record.owner, base, record.name, vars(base)[record.name], later)
            return record.old, record.old is not MISSING
    exists = located.exists
    if exists and isinstance(located.owner, type) and isinstance(located.defined_on, type) \
            and located.defined_on is not located.owner:
        return _inherited(patch, located.owner, located.defined_on, located.name, located.raw, later)
    return located.raw, exists


def _replacement(patch: PatchRecord, exists: bool) -> Any:
    """Return the object to install in place of the original (``NO_REPLACEMENT``: the original, wrapped)."""
    replacement = patch.active_replacement
    if replacement is None:
        return placeholder(patch.target, patch.replacement_site or "?")
    if is_reference(replacement):
        return resolve_reference(replacement, target=patch.target)
    if replacement is NO_REPLACEMENT and not exists:
        if not patch.create_dummy:
            raise PatchApplyError(f"cannot wrap {patch.target!r}: it does not exist and no replacement is "
                                  f"registered to wrap", target=patch.target)
        # MindSpeed wraps a dummy function: the wraps go around a placeholder raising NotImplementedError
        return placeholder(patch.target, (patch.wraps[0][1] if patch.wraps else None) or "?")
    return replacement


def _check_kind(patch: PatchRecord, located: Located, replacement: Any, original: Any) -> None:
    """Refuse a replacement of another kind than the original (a module by a non-module, a callable by data).

    ``original`` is the raw original (a descriptor is looked into), ``None`` when there is none.
    """
    if replacement is NO_REPLACEMENT:
        return
    if located.is_module:
        if not isinstance(replacement, ModuleType):
            raise PatchApplyError(f"{patch.target!r} is a module: its replacement must be a module object, got "
                                  f"{type(replacement).__name__}", target=patch.target)
    elif type(replacement) is FunctionType:
        return  # callable: fits any original (the usual case, told at once)
    elif callable(unwrap_descriptor(original)) and not callable(unwrap_descriptor(replacement)) and \
            not isinstance(replacement, (ModuleType, property)):
        raise PatchApplyError(f"{patch.target!r} is callable but its replacement {replacement!r} is not",
                              target=patch.target)


def _check_signature(patch: PatchRecord, raw: Any, func: Any, replacement: Any, strict: bool) -> None:
    """Warn (strict: raise) when the installed callable cannot take every call the original takes."""
    problems = signature_problems(raw, func)
    if not problems:
        return
    text = [f"replacement {qualified_name(replacement)} {problem}" for problem in problems]
    if strict:
        raise SignatureMismatchError(f"{patch.target}: " + "; ".join(text), target=patch.target, problems=problems)
    patch.warnings = text


def install(patch: PatchRecord, located: Located, journal: list[Record], *, strict: bool, traced: bool,
            later: Later | None = None) -> AliasEntry | None:
    """Install ``patch`` at ``located`` (its module is imported), journaling every change.

    The records go to ``patch.records`` and ``journal``; on failure what this call changed is undone
    before the error propagates.

    Args:
        patch: the record of the target, with what to install chosen (``active_replacement``, ``active_wraps``).
        located: where the target stands (:func:`resolve`), not waiting for an import.
        journal: where the records of the changes go.
        strict: a signature mismatch is an error, not a warning.
        traced: wrap the installed callable in a call-counting shim.
        later: tells whether another record of the same registry was registered after ``patch`` (an
            inherited target then looks through what that one installed on a base class).

    Returns:
        The alias entry for the one-pass rebinding of ``from``-imported names, or ``None``.

    Raises:
        TargetNotFoundError, SignatureMismatchError, PatchApplyError, or whatever a wrap raises.
    """
    if located.owner is None and located.is_module and "." not in patch.target:
        raise PatchApplyError(f"cannot replace top-level module {patch.target!r}: block it and provide "
                              f"a module under another name instead", target=patch.target)
    raw, exists = _original(patch, located, later)
    if not exists:
        if not patch.create_dummy:
            raise not_found(patch.target, patch.parts, len(patch.parts) - 1, located.owner)
        patch.stub = True
    replacement = _replacement(patch, exists)
    _check_kind(patch, located, replacement, raw if exists else None)
    shim = None
    if (traced or patch.log_calls) and not located.is_module:
        def shim(func: Any) -> Any:
            return counting_shim(func, patch, patch.target, patch.log_calls)
    value, func = build_value(raw if exists else None, replacement, patch.active_wraps, shim, target=patch.target)
    if exists and replacement is not NO_REPLACEMENT and not located.is_module:
        _check_signature(patch, raw, func, replacement, strict)
    records: list[Record] = []
    try:
        _put(patch, located, value, records)
    except BaseException:
        undo_all(records)
        raise
    patch.records.extend(records)
    journal.extend(records)
    return _alias_entry(patch, located, replacement, value)


def _alias_entry(patch: PatchRecord, located: Located, replacement: Any, value: Any) -> AliasEntry | None:
    """Return what the alias pass rebinds for a module-level target: ``from owner import name`` copies.

    The owner and the replacement's own module (which may import the original on purpose) are left alone.
    """
    current = located.raw
    if type(current) is FunctionType:  # the usual case (a function exists, and is not a module)
        if not isinstance(located.owner, ModuleType):
            return None
    elif not (located.exists and is_identity_meaningful(current)
              and (located.is_module or isinstance(located.owner, ModuleType))):
        return None
    home = replacement if type(replacement) is FunctionType else unwrap_descriptor(replacement)
    skip = (getattr(home, "__module__", None) or "", getattr(located.owner, "__name__", ""))
    return (patch.parts[-1], current, value, patch, skip)


def _put(patch: PatchRecord, located: Located, value: Any, records: list[Record]) -> None:
    """Put ``value`` where ``located`` says (``sys.modules`` too for a module), journaled in ``records``."""
    if located.is_module:
        records.append(Record("module", None, located.module_name, located.raw, value, True, patch))
        sys.modules[located.module_name] = value
    if located.owner is not None:
        # A submodule hooked while it is first imported is not yet an attribute of its parent (Python
        # sets it right after): what undo must put back there is still the original module.
        set_attr(records, located.owner, located.name, value, patch,
                 old=located.raw if located.is_module else MISSING)
