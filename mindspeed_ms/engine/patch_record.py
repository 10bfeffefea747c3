"""The per-target record a registry keeps: :class:`PatchRecord` (what is registered, what applying did).

Installing a record where its target stands is :mod:`.install`'s job; this module is data and the
choices made from it (which registrations apply, the status snapshot).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from typing import Any

from .errors import PatchConflictError
from .journal import MISSING, Record, overwritten_by
from .replacements import NO_REPLACEMENT, describe
from .status import PatchStatus, make_status

__all__ = ["PatchRecord", "StatusSnapshot", "status_of"]

logger = logging.getLogger("mindspeed_ms")

#: registration order of targets, across registries (a PatchRecord is created at its target's first registration)
_SEQUENCE = itertools.count()


class PatchRecord:
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
        #: modules that held the replacement under the target's name when it was applied (left alone at revert)
        self.held_aliases: list[str] = []
        self.calls = 0
        self.records: list[Record] = []
        self.watching: str | None = None
        self._described: tuple[Any, str] = (NO_REPLACEMENT, "")

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

    def set_replacement(self, new_func: Any, site: str, force: bool, provider: str | None,
                        requires: tuple[str, ...], fallback: bool) -> None:
        """Register ``new_func`` as the replacement, by the rules of conflicts, forcing and fallbacks.

        Raises:
            PatchConflictError: another replacement is registered and ``force`` is False.
        """
        current = self.replacement
        if current is new_func:
            if provider is None and self.replacement_provider is not None:
                # the user registers a provider's replacement too: it is the user's now
                self.replacement_site, self.replacement_provider = site, None
                self.replacement_forced, self.replacement_requires = force, requires
                self.replacement_fallback = False
            return
        if new_func is None and current is not NO_REPLACEMENT:
            return  # a placeholder never displaces a real replacement
        occupied = current not in (NO_REPLACEMENT, None)
        if occupied and not force and provider is not None \
                and self.replacement_provider is None and self.replacement_forced:
            # The user forced this replacement over the provider's; providers registering again
            # (repatch()) do not take it back.
            logger.debug("%s: provider %r's replacement registered at %s yields to the user's forced one at %s",
                         self.target, provider, site, self.replacement_site)
            return
        if occupied and fallback and not self.replacement_fallback and provider != self.replacement_provider:
            # a fallback registered after someone else's replacement waits behind it
            self.yielded.append((new_func, site, provider, requires))
            logger.info("%s: fallback %s registered at %s by %r waits behind %s registered at %s", self.target,
                        describe(new_func), site, provider, describe(current), self.replacement_site)
            return
        if occupied and self.replacement_fallback and not fallback and provider != self.replacement_provider:
            # someone else's replacement takes the target from a fallback, which waits behind it
            self.yielded.append((current, self.replacement_site or "?", self.replacement_provider,
                                 self.replacement_requires))
            logger.info("%s: %s registered at %s takes the target from fallback %s registered at %s by %r",
                        self.target, describe(new_func), site, describe(current), self.replacement_site,
                        self.replacement_provider)
        elif occupied and not force:
            raise PatchConflictError(
                f"{self.target!r} already has replacement {current!r} registered at {self.replacement_site}; "
                f"the registration at {site} wants {new_func!r}. Pass force_patch=True to replace it, or "
                f"register one of them as a wrap", target=self.target, sites=(self.replacement_site or "?", site))
        self.replacement = new_func
        self.replacement_site = site
        self.replacement_provider = provider
        self.replacement_forced = force and provider is None
        self.replacement_requires = requires
        self.replacement_fallback = fallback

    def add_wrap(self, wrap: Any, site: str, provider: str | None, requires: tuple[str, ...]) -> bool:
        """Register ``wrap`` (after the others); return whether that changed anything."""
        index = next((i for i, entry in enumerate(self.wraps) if entry[0] is wrap), None)
        if index is None:
            self.wraps.append((wrap, site, provider, requires))
            return True
        if provider is None and self.wraps[index][2] is not None:
            # the user registers a provider's wrap too: it is the user's now, and stays when that
            # provider's registrations are withdrawn
            self.wraps[index] = (wrap, site, None, requires)
            return True
        return False

    def mark_changed(self) -> None:
        """A registration changed this record: the next ``apply()`` takes it into account."""
        if self.state in ("applied", "pending-import"):
            # installed again on top of itself; an armed one chooses again what goes in on import
            self.dirty = True
        elif self.state in ("skipped", "failed"):
            self.state, self.reason = "registered", None  # judged again

    @property
    def requires(self) -> tuple[str, ...]:
        """The requirements of every registration (each applies to its own replacement or wrap)."""
        return _requires(self.replacement, self.replacement_requires, self.wraps)

    def select(self) -> list[str]:
        """Choose what to install from the registrations whose requirements are met.

        Sets ``active_replacement`` and ``active_wraps``; returns one sentence per registration
        left out (what it is, where and by whom it was registered, and why). Nothing active means
        the patch is skipped.
        """
        if not self.replacement_requires and (not self.wraps or not any(wrap[3] for wrap in self.wraps)):
            # nothing conditional (the usual case): everything registered goes in
            self.unverified = []
            self.active_replacement, self.active_provider = self.replacement, self.replacement_provider
            self.active_wraps = [wrap[0] for wrap in self.wraps] if self.wraps else []
            return []
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
        return _kinds(self.is_block, self.replacement, self.wraps)

    def outcome(self) -> tuple[Any, ...]:
        """Return where applying stands (to restore it if a re-install is rolled back).

        What :meth:`select` chose is part of it: a rolled-back re-install leaves in place what the
        previous apply installed, and the status must name that, not what the failed one chose.
        """
        return (self.state, self.reason, list(self.warnings), self.stub, list(self.aliases), self.calls,
                list(self.records), self.watching, self.active_replacement, self.active_provider,
                list(self.active_wraps), list(self.notes), list(self.unverified), list(self.held_aliases))

    def restore_outcome(self, saved: tuple[Any, ...]) -> None:
        (self.state, self.reason, self.warnings, self.stub, self.aliases, self.calls, self.records,
         self.watching, self.active_replacement, self.active_provider, self.active_wraps, self.notes,
         self.unverified, self.held_aliases) = saved

    def reset(self) -> None:
        """Forget the outcome of an earlier apply (after a revert)."""
        self.reason = None
        self.notes = []
        self.warnings = []
        self.stub = False
        self.aliases = []
        self.held_aliases = []
        self.calls = 0
        self.records = []
        self.watching = None
        self.dirty = False
        self.active_replacement, self.active_provider = NO_REPLACEMENT, None

    def drift(self) -> str | None:
        """Say what replaced the installed object since it was applied (someone else's ``setattr``), else ``None``."""
        for record in self.records:
            if record.kind == "attr" and record.owner.__dict__.get(record.name, MISSING) is record.new:
                continue  # the usual case, told at once: the slot holds what the record installed
            now = overwritten_by(record)
            if now is not MISSING:
                where = record.name if record.owner is None else \
                    f"{getattr(record.owner, '__name__', type(record.owner).__name__)}.{record.name}"
                return (f"{where} was replaced after it was patched: it now holds {describe(now)}, not what "
                        f"mindspeed_ms installed (revert leaves it as it is)")
        return None

    def snapshot(self, traced: bool) -> StatusSnapshot:
        """Capture what :meth:`status` reports, now (cheap: the status itself is built from it when read).

        The state is judged now (an ``applied`` patch whose slot someone else wrote since is
        ``overwritten``), and every list is copied: the status built later from the snapshot is the
        status of this moment, whatever happens to the record meanwhile.
        """
        state, reason = self.state, self.reason
        if state == "applied":
            drift = self.drift()
            if drift is not None:
                state, reason = "overwritten", drift
        yielded, wraps, aliases, notes, warnings, unverified = (self.yielded, self.wraps, self.aliases, self.notes,
                                                                self.warnings, self.unverified)
        return (self, state, reason, self.is_block, self.replacement, self.active_replacement, self.active_provider,
                self.replacement_provider, self.provider, tuple(yielded) if yielded else (), tuple(self.sites),
                self.replacement_site, tuple(wraps) if wraps else (), self.stub, tuple(aliases) if aliases else (),
                (*notes, *warnings) if notes or warnings else (), self.purpose,
                self.calls if (traced or self.log_calls) else None, self.replacement_requires,
                tuple(unverified) if unverified else ())

    def status(self, traced: bool) -> PatchStatus:
        """Return the status of this record now (``traced``: the registry counts calls)."""
        return status_of(self.snapshot(traced))

    def describe_replacement(self, shown: Any) -> str:
        """Name ``shown`` for a status, once per replacement (the name of a replacement does not change)."""
        if self._described[0] is not shown:
            self._described = (shown, describe(shown))
        return self._described[1]

    def __repr__(self) -> str:
        return f"<PatchRecord {self.target} {'+'.join(self.kinds)} {self.state}>"


#: What :meth:`PatchRecord.snapshot` captures (see :func:`status_of`).
StatusSnapshot = tuple[Any, ...]


def status_of(snapshot: StatusSnapshot) -> PatchStatus:
    """Build the :class:`PatchStatus` a :meth:`PatchRecord.snapshot` captured."""
    (record, state, reason, is_block, replacement, active_replacement, active_provider, replacement_provider,
     provider, yielded, sites, replacement_site, wraps, stub, aliases, warnings, purpose, calls,
     replacement_requires, unverified) = snapshot
    # a fallback chosen because the replacement ahead of it was left out (requirements) is what is installed
    fallback_in = active_replacement is not NO_REPLACEMENT and active_replacement is not replacement
    shown = active_replacement if fallback_in else replacement
    if shown is NO_REPLACEMENT:
        described = None
    elif shown is None:
        described = "<placeholder raising NotImplementedError>"
    else:
        described = record.describe_replacement(shown)
    if fallback_in:
        provider = active_provider
    elif yielded:  # the replacement that superseded a fallback is installed: its provider (None: the user)
        provider = replacement_provider
    sources = tuple(site for site, _ in sites)
    first = replacement_site or (wraps[0][1] if wraps else (sources or ("?",))[0])
    superseded = tuple(f"{describe(func)} (registered at {site}" + (f" by provider {owner!r})" if owner else ")")
                       for func, site, owner, _ in yielded) if yielded else ()
    return make_status(
        target=record.target, kinds=_kinds(is_block, replacement, wraps), state=state, replacement=described,
        registered_at=first, sources=sources, stub=stub, aliases=aliases, warnings=warnings, reason=reason,
        purpose=purpose, provider=provider, calls=calls, requires=_requires(replacement, replacement_requires, wraps),
        superseded=superseded, unverified=unverified)


def _kinds(is_block: bool, replacement: Any, wraps: Sequence[tuple[Any, ...]]) -> tuple[str, ...]:
    if is_block:
        return ("block",)
    return (("replace",) if replacement is not NO_REPLACEMENT else ()) + (("wrap",) if wraps else ())


def _requires(replacement: Any, replacement_requires: tuple[str, ...], wraps: Sequence[tuple[Any, ...]]
              ) -> tuple[str, ...]:
    found = replacement_requires if replacement is not NO_REPLACEMENT else ()
    for wrap in wraps:
        found += wrap[3]
    return tuple(dict.fromkeys(found))
