"""The per-target record a registry keeps: :class:`Patch`, and installing one patch where it stands."""

from __future__ import annotations

import importlib
import itertools
import re
import sys
from types import ModuleType
from typing import Any, Callable

from .errors import PatchApplyError, SignatureMismatchError, TargetNotFoundError
from .journal import (
    MISSING,
    AliasEntry,
    Record,
    build_value,
    counting_shim,
    is_identity_meaningful,
    live_records,
    make_stub,
    overwritten_by,
    placeholder,
    set_attr,
)
from .signatures import signature_problems, unwrap_descriptor
from .status import PatchStatus
from .targets import Located, not_found

__all__ = ["Patch", "NO_REPLACEMENT", "install", "stub_chain", "qualified_name", "describe", "is_reference",
           "resolve_reference"]

NO_REPLACEMENT: Any = MISSING
#: registration order of targets, across registries (a Patch is created at its target's first registration)
_SEQUENCE = itertools.count()


_REFERENCE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_reference(value: Any) -> bool:
    """Tell whether ``value`` is a lazy ``"pkg.mod:attr"`` reference to a replacement."""
    return isinstance(value, str) and _REFERENCE.match(value) is not None


def resolve_reference(reference: str, *, target: str | None = None) -> Any:
    """Import ``"pkg.mod:attr"`` and return the attribute (dotted attributes allowed after the colon).

    Raises:
        PatchApplyError: the module cannot be imported or has no such attribute.
    """
    module_name, _, attribute = reference.partition(":")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as error:
        raise PatchApplyError(f"the replacement {reference!r} of {target!r} cannot be loaded: "
                              f"{type(error).__name__}: {error}", target=target) from error
    return value


def describe(obj: Any) -> str:
    """Name a replacement or wrap for a person (a lazy reference is shown as written)."""
    return obj if is_reference(obj) else qualified_name(obj)


def qualified_name(obj: Any) -> str:
    """Return ``module.qualname`` of ``obj`` (or its repr when it has none)."""
    obj = unwrap_descriptor(obj)
    if isinstance(obj, ModuleType):
        return obj.__name__
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        return repr(obj)
    module = getattr(obj, "__module__", None)
    return f"{module}.{qualname}" if module else str(qualname)


class Patch:
    """Everything registered for one target, and where applying it stands.

    A registry owns its patches; read them through :meth:`PatchRegistry.status`. Attributes set at
    registration: ``target``, ``replacement`` (``NO_REPLACEMENT`` when only wraps are registered;
    ``None`` for a placeholder; a ``"pkg.mod:attr"`` string is a lazy reference, imported when the
    patch is installed), its ``replacement_requires``, ``wraps`` (``(wrapper, site, provider,
    requires)`` in registration order), ``purpose``, ``provider`` (of the first registration),
    ``create_dummy``, ``log_calls``, ``is_block``. Every registration's ``(site, provider)`` is kept
    in ``sites``, so one provider's registrations can be withdrawn exactly. Requirements belong to
    each registration: an unmet one leaves that replacement or wrap out (``requires`` is their union).
    """

    def __init__(self, target: str, parts: tuple[str, ...], *, is_block: bool = False) -> None:
        self.target = target
        self.parts = parts
        self.is_block = is_block
        #: when the target was first registered (orders the registry's patches as MindSpeed applies them)
        self.seq = next(_SEQUENCE)
        self.replacement: Any = NO_REPLACEMENT
        self.replacement_site: str | None = None
        self.replacement_provider: str | None = None
        #: the replacement was registered with force_patch outside any provider: it outranks providers
        self.replacement_forced = False
        self.replacement_requires: tuple[str, ...] = ()
        #: the replacement is a fallback (a built-in provider's): another registration takes its place
        self.replacement_fallback = False
        #: fallback replacements waiting behind the replacement, ``(func, site, provider, requires)``
        self.yielded: list[tuple[Any, str, str | None, tuple[str, ...]]] = []
        self.wraps: list[tuple[Any, str, str | None, tuple[str, ...]]] = []
        self.sites: list[tuple[str, str | None]] = []
        #: what the last apply() chose to install: the replacement (NO_REPLACEMENT: the original) and wraps
        self.active_replacement: Any = NO_REPLACEMENT
        self.active_provider: str | None = None
        self.active_wraps: list[Any] = []
        self.purpose: str | None = None
        self.provider: str | None = None
        self.create_dummy = False
        self.log_calls = False
        #: changed after it was applied: the next apply() installs it again
        self.dirty = False
        # where applying stands
        self.state = "registered"
        self.reason: str | None = None
        self.warnings: list[str] = []
        #: registrations left out because their requirements are unmet (see select())
        self.notes: list[str] = []
        self.unverified: list[str] = []  # requirements met without a version to check (set by select())
        self.stub = False
        self.aliases: list[str] = []
        self.calls = 0
        self.records: list[Record] = []
        self.watching: str | None = None

    # -- registration data ---------------------------------------------------------------------
    def registration(self) -> tuple[Any, ...]:
        """Return the registration fields (for withdrawing a provider's registrations)."""
        return (self.replacement, self.replacement_site, self.replacement_provider, self.replacement_forced,
                self.replacement_requires, self.replacement_fallback, list(self.yielded), list(self.wraps),
                list(self.sites), self.purpose, self.provider, self.create_dummy, self.log_calls)

    def restore_registration(self, saved: tuple[Any, ...]) -> None:
        (self.replacement, self.replacement_site, self.replacement_provider, self.replacement_forced,
         self.replacement_requires, self.replacement_fallback, self.yielded, self.wraps, self.sites, self.purpose,
         self.provider, self.create_dummy, self.log_calls) = saved
        self.yielded, self.wraps, self.sites = list(self.yielded), list(self.wraps), list(self.sites)

    def clear_replacement(self) -> None:
        """Remove the replacement; the latest fallback waiting behind it (if any) takes its place."""
        if self.yielded:
            func, site, provider, requires = self.yielded.pop()
            self.replacement, self.replacement_site, self.replacement_provider = func, site, provider
            self.replacement_requires, self.replacement_forced, self.replacement_fallback = requires, False, True
            return
        self.replacement, self.replacement_site, self.replacement_provider = NO_REPLACEMENT, None, None
        self.replacement_requires, self.replacement_forced, self.replacement_fallback = (), False, False

    @property
    def requires(self) -> tuple[str, ...]:
        """The requirements of every registration (each applies to its own replacement or wrap)."""
        found = self.replacement_requires if self.replacement is not NO_REPLACEMENT else ()
        for wrap in self.wraps:
            found += wrap[3]
        return tuple(dict.fromkeys(found))

    def select(self) -> list[str]:
        """Choose what to install from the registrations whose requirements are met.

        Sets ``active_replacement`` and ``active_wraps``; returns one sentence per registration
        left out (what it is, where and by whom it was registered, and why). Nothing active means
        the patch is skipped.
        """
        from .requirements import check_requirements

        notes: list[str] = []
        self.unverified = []

        def unmet_requirements(requires: tuple[str, ...]) -> list[str]:
            # what is installed without a version to check applies, and says so (self.unverified)
            check = check_requirements(requires)
            if not check.unmet:
                self.unverified.extend(item for item in check.unverified if item not in self.unverified)
            return list(check.unmet)

        def who(site: str | None, provider: str | None) -> str:
            return f"registered at {site}" + (f" by provider {provider!r}" if provider else "")

        self.active_replacement, self.active_provider = self.replacement, self.replacement_provider
        if self.replacement is not NO_REPLACEMENT and self.replacement_requires:
            unmet = unmet_requirements(self.replacement_requires)
            if unmet:
                self.active_replacement, self.active_provider = NO_REPLACEMENT, None
                owner = who(self.replacement_site, self.replacement_provider)
                notes.append(f"replacement {describe(self.replacement)} ({owner}) left out: {'; '.join(unmet)}")
                # the fallback waiting behind it takes the target, as when that replacement is withdrawn
                for func, site, provider, requires in reversed(self.yielded):
                    unmet = unmet_requirements(requires) if requires else []
                    if unmet:
                        notes.append(f"fallback {describe(func)} ({who(site, provider)}) left out: {'; '.join(unmet)}")
                        continue
                    self.active_replacement, self.active_provider = func, provider
                    break
        self.active_wraps = []
        for wrap, site, provider, requires in self.wraps:
            unmet = unmet_requirements(requires) if requires else []
            if unmet:
                notes.append(f"wrap {describe(wrap)} ({who(site, provider)}) left out: {'; '.join(unmet)}")
            else:
                self.active_wraps.append(wrap)
        return notes + list(self.unverified)

    @property
    def has_active(self) -> bool:
        """Whether :meth:`select` left anything to install."""
        return self.active_replacement is not NO_REPLACEMENT or bool(self.active_wraps)

    @property
    def sources(self) -> list[str]:
        """``file:line`` of every registration, in order."""
        return [site for site, _ in self.sites]

    def drop_provider(self, provider: str) -> bool:
        """Remove what ``provider`` registered here; return whether anything is left."""
        self.yielded = [entry for entry in self.yielded if entry[2] != provider]
        if self.replacement_provider == provider and self.replacement is not NO_REPLACEMENT:
            self.clear_replacement()
        self.wraps = [wrap for wrap in self.wraps if wrap[2] != provider]
        self.sites = [entry for entry in self.sites if entry[1] != provider]
        if self.provider == provider:
            self.provider = next((p for _, p in self.sites if p is not None), None)
        return bool(self.sites) and (self.is_block or bool(self.kinds))

    @property
    def kinds(self) -> tuple[str, ...]:
        if self.is_block:
            return ("block",)
        kinds: tuple[str, ...] = ()
        if self.replacement is not NO_REPLACEMENT:
            kinds += ("replace",)
        if self.wraps:
            kinds += ("wrap",)
        return kinds

    def outcome(self) -> tuple[Any, ...]:
        """Return where applying stands (to restore it if a re-install is rolled back)."""
        return (self.state, self.reason, list(self.warnings), self.stub, list(self.aliases), self.calls,
                list(self.records), self.watching)

    def restore_outcome(self, saved: tuple[Any, ...]) -> None:
        (self.state, self.reason, self.warnings, self.stub, self.aliases, self.calls, self.records,
         self.watching) = saved

    def reset(self) -> None:
        """Forget the outcome of an earlier apply (after a revert)."""
        self.reason = None
        self.notes = []
        self.warnings = []
        self.stub = False
        self.aliases = []
        self.calls = 0
        self.records = []
        self.watching = None
        self.dirty = False
        self.active_replacement, self.active_provider = NO_REPLACEMENT, None

    def drift(self) -> str | None:
        """Say what replaced the installed object since it was applied (someone else's ``setattr``), else ``None``."""
        for record in self.records:
            now = overwritten_by(record)
            if now is not MISSING:
                where = record.name if record.owner is None else \
                    f"{getattr(record.owner, '__name__', type(record.owner).__name__)}.{record.name}"
                return (f"{where} was replaced after it was patched: it now holds {describe(now)}, not what "
                        f"mindspeed_ms installed (revert leaves it as it is)")
        return None

    def status(self, traced: bool) -> PatchStatus:
        # a fallback chosen because the replacement ahead of it was left out (requirements) is what is installed
        fallback_in = self.active_replacement is not NO_REPLACEMENT and self.active_replacement is not self.replacement
        shown = self.active_replacement if fallback_in else self.replacement
        if shown is NO_REPLACEMENT:
            replacement = None
        elif shown is None:
            replacement = "<placeholder raising NotImplementedError>"
        else:
            replacement = describe(shown)
        if fallback_in:
            provider = self.active_provider
        elif self.yielded:  # the replacement that superseded a fallback is installed: its provider (None: the user)
            provider = self.replacement_provider
        else:
            provider = self.provider
        first = self.replacement_site or (self.wraps[0][1] if self.wraps else (self.sources or ["?"])[0])
        state, reason = self.state, self.reason
        if state == "applied":
            drift = self.drift()
            if drift is not None:
                state, reason = "overwritten", drift
        return PatchStatus(
            target=self.target, kinds=self.kinds, state=state, replacement=replacement,
            registered_at=first, sources=tuple(self.sources), stub=self.stub, aliases=tuple(self.aliases),
            warnings=tuple(self.notes) + tuple(self.warnings), reason=reason, purpose=self.purpose,
            provider=provider,
            calls=self.calls if (traced or self.log_calls) else None, requires=self.requires,
            superseded=tuple(f"{describe(func)} (registered at {site}" + (f" by provider {provider!r})" if provider
                                                                          else ")")
                             for func, site, provider, _ in self.yielded),
            unverified=tuple(self.unverified))

    def __repr__(self) -> str:
        return f"<Patch {self.target} {'+'.join(self.kinds)} {self.state}>"


def stub_chain(patch: Patch, error: TargetNotFoundError, journal: list[Record]) -> Located:
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


def _inherited(owner: type, defined_on: type, name: str, raw: Any, later: Callable[[Any], bool] | None
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
        if record is None or not later(record.patch):
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


def _original(patch: Patch, located: Located, later: Callable[[Any], bool] | None = None) -> tuple[Any, bool]:
    """Return ``(raw original, whether it exists)``: from the patch's first live record if installed."""
    for record in patch.records:
        if not record.alive:
            continue
        if (record.kind in ("attr", "getattr") and record.owner is located.owner and record.name == located.name) or \
                (record.kind == "module" and located.is_module and record.name == located.module_name):
            if record.old is MISSING and isinstance(record.owner, type):
                # patched on a subclass that inherited it: the original is what the bases provide
                for base in record.owner.__mro__[1:]:
                    if record.name in vars(base):
                        return _inherited(record.owner, base, record.name, vars(base)[record.name], later)
            return record.old, record.old is not MISSING
    if located.exists and isinstance(located.owner, type) and isinstance(located.defined_on, type) \
            and located.defined_on is not located.owner:
        return _inherited(located.owner, located.defined_on, located.name, located.raw, later)
    return located.raw, located.exists


def install(patch: Patch, located: Located, journal: list[Record], *, strict: bool, traced: bool,
            later: Callable[[Any], bool] | None = None) -> AliasEntry | None:
    """Install ``patch`` at ``located`` (its module is imported), journaling every change.

    ``later(other)`` tells whether another :class:`Patch` of the same registry was registered after
    this one (an inherited target then looks through what it installed on a base class).

    Returns:
        The alias entry for the one-pass rebinding of ``from``-imported names, or ``None``.

    Raises:
        TargetNotFoundError, SignatureMismatchError, PatchApplyError, or whatever a wrap raises.
    """
    if located.owner is None and located.is_module and "." not in patch.target:
        raise PatchApplyError(f"cannot replace top-level module {patch.target!r}: block it and provide "
                              f"a module under another name instead", target=patch.target)
    # Re-installing a changed patch builds on the true original, kept in its first record; the
    # new records then chain on top of the old ones, so revert (and rollback) stay exact.
    raw, exists = _original(patch, located, later)
    if not exists:
        if not patch.create_dummy:
            raise not_found(patch.target, patch.parts, len(patch.parts) - 1, located.owner)
        patch.stub = True
    replacement = patch.active_replacement
    if replacement is None:
        replacement = placeholder(patch.target, patch.replacement_site or "?")
    elif is_reference(replacement):
        replacement = resolve_reference(replacement, target=patch.target)
    if replacement is NO_REPLACEMENT and not exists and patch.create_dummy:
        # MindSpeed wraps a dummy function: the wraps go around a placeholder raising NotImplementedError
        replacement = placeholder(patch.target, (patch.wraps[0][1] if patch.wraps else None) or "?")
    if replacement is NO_REPLACEMENT and not exists:
        raise PatchApplyError(f"cannot wrap {patch.target!r}: it does not exist and no replacement is "
                              f"registered to wrap", target=patch.target)
    if located.is_module and not isinstance(replacement, ModuleType) and replacement is not NO_REPLACEMENT:
        raise PatchApplyError(f"{patch.target!r} is a module: its replacement must be a module object, got "
                              f"{type(replacement).__name__}", target=patch.target)
    original = unwrap_descriptor(raw) if exists else None
    if (replacement is not NO_REPLACEMENT and callable(original) and not callable(unwrap_descriptor(replacement))
            and not isinstance(replacement, (ModuleType, property))):
        raise PatchApplyError(f"{patch.target!r} is callable but its replacement {replacement!r} is not",
                              target=patch.target)
    shim = None
    if (traced or patch.log_calls) and not located.is_module:
        def shim(func: Any) -> Any:
            return counting_shim(func, patch, patch.target, patch.log_calls)
    value, func = build_value(raw if exists else None, replacement, patch.active_wraps, shim,
                              target=patch.target)
    if exists and replacement is not NO_REPLACEMENT and not located.is_module:
        problems = signature_problems(raw, func)
        if problems:
            text = [f"replacement {qualified_name(replacement)} {p}" for p in problems]
            if strict:
                raise SignatureMismatchError(f"{patch.target}: " + "; ".join(text), target=patch.target,
                                             problems=problems)
            patch.warnings = text
    if located.is_module:
        journal.append(Record("module", None, located.module_name, located.raw, value, True, patch))
        sys.modules[located.module_name] = value
    if located.owner is not None:
        # A submodule hooked while it is first imported is not yet an attribute of its parent (Python
        # sets it right after): what undo must put back there is still the original module.
        set_attr(journal, located.owner, located.name, value, patch,
                 old=located.raw if located.is_module else MISSING)
    current = located.raw
    if located.exists and is_identity_meaningful(current) and (located.is_module
                                                              or isinstance(located.owner, ModuleType)):
        skip = frozenset({getattr(unwrap_descriptor(replacement), "__module__", None) or "",
                          getattr(located.owner, "__name__", "")})
        return (current, value, patch, skip)
    return None

