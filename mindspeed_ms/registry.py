"""PatchRegistry: what is registered, conflicts, provenance, and the apply/revert lifecycle.

Locking: ``_lock`` guards the registry's data and is a leaf lock: it is never held while user
code (wraps, replacements) runs or while anything is imported, so the import hook may take it
briefly without risk of deadlock. ``_op_lock`` serializes apply/revert/unregister; the import hook
never takes it.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from .errors import (
    AdaptationError,
    PatchApplyError,
    PatchConflictError,
    PatchValidationError,
    TargetNotFoundError,
)
from .hooks import watcher
from .patch import NO_REPLACEMENT, Patch, install, stub_chain
from .patching import AliasEntry, Record, evict_module, rebind_aliases, undo_all
from .requirements import normalize_requires, unmet_requirements
from .status import STATES, ApplyReport, PatchStatus
from .targets import locate, parse_target, suggest

__all__ = ["PatchRegistry"]

logger = logging.getLogger("mindspeed_ms")

_KINDS = ("auto", "replace", "wrap")
#: Modules whose frames are machinery, not registration sites.
INTERNAL_MODULES = {__name__, "contextlib", "mindspeed_ms.adaptation", "mindspeed_ms.providers"}


def _caller_site() -> str:
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") in INTERNAL_MODULES:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:  # pragma: no cover - only without any caller frame
        return "?"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class PatchRegistry:
    """Patches registered by dotted target, applied lazily and atomically, reverted exactly.

    Args:
        name: shown in logs and errors.
        strict: make signature mismatches and deferred failures errors instead of warnings.
        trace: wrap every installed callable in a counting shim (``PatchStatus.calls``).
    """

    def __init__(self, name: str = "default", *, strict: bool = False, trace: bool = False) -> None:
        self.name = name
        self.strict = strict
        self.trace = trace
        self._patches: dict[str, Patch] = {}
        self._lock = threading.RLock()
        self._op_lock = threading.RLock()
        self._journal: list[Record] = []
        self._waiting: dict[str, list[Patch]] = {}
        self._blocked: list[str] = []
        self._applied = False
        self._generation = 0
        self._provider: str | None = None
        self._scopes: list[dict[str, Any]] = []

    # -- registration ----------------------------------------------------------------------------
    def register(self, target: str, new_func: Any = None, *, force_patch: bool = False,
                 create_dummy: bool = False, kind: str = "auto",
                 requires: None | str | Sequence[str] = None, purpose: str | None = None,
                 log_calls: bool = False) -> Patch:
        """Register a replacement or a wrap for ``target``; nothing is imported or patched yet.

        Args:
            target: dotted path of a module, function, class or class attribute.
            new_func: the replacement (``kind="replace"``), a decorator ``wrapper(fn) -> fn``
                (``kind="wrap"``), or ``None`` for a placeholder raising ``NotImplementedError``.
            force_patch: replace an earlier replacement instead of raising a conflict.
            create_dummy: create missing modules/attributes as stubs instead of failing.
            kind: ``"replace"``, ``"wrap"`` or ``"auto"`` (MindSpeed's rule: a name ending in
                ``wrapper`` or ``decorator`` wraps, anything else replaces).
            requires: PEP 508 requirement(s); unmet ones make the patch ``skipped``.
            purpose: one line saying which incompatibility the patch fixes.
            log_calls: log every call of the installed object.

        Returns:
            The target's :class:`Patch` record (one per target).

        Raises:
            PatchValidationError: malformed target, kind, replacement or requirement.
            PatchConflictError: a different replacement is registered already (without ``force_patch``).
        """
        parts = parse_target(target)
        if kind not in _KINDS:
            raise PatchValidationError(f"kind {kind!r} for {target!r} is unknown: use one of "
                                       f"{', '.join(map(repr, _KINDS))}", target=target)
        if kind == "auto":
            name = getattr(new_func, "__name__", "") if new_func is not None else ""
            kind = "wrap" if isinstance(name, str) and name.endswith(("wrapper", "decorator")) else "replace"
        if kind == "wrap" and not callable(new_func):
            raise PatchValidationError(f"a wrap for {target!r} must be a callable decorator wrapper(fn) -> fn, "
                                       f"got {new_func!r}", target=target)
        if new_func is not None and not callable(new_func) and not isinstance(new_func, (ModuleType, property)):
            self._check_non_callable(target, parts, new_func)
        reqs = normalize_requires(requires, target=target)
        site = _caller_site()
        with self._lock:
            patch = self._patches.get(target)
            created = patch is None
            if patch is None:
                patch = Patch(target, parts)
            elif patch.is_block:
                raise PatchConflictError(f"{target!r} is blocked by this registry ({patch.sources[0]}); "
                                         f"unregister the block before patching it", target=target,
                                         sites=(patch.sources[0], site))
            self._remember(patch, created)
            if kind == "replace":
                self._set_replacement(patch, new_func, site, force_patch)
            elif any(existing is new_func for existing, _ in patch.wraps):
                return patch
            else:
                patch.wraps.append((new_func, site))
            patch.sources.append(site)
            patch.requires = tuple(dict.fromkeys(patch.requires + reqs))
            patch.create_dummy = patch.create_dummy or create_dummy
            patch.log_calls = patch.log_calls or log_calls
            patch.purpose = patch.purpose or purpose
            patch.provider = patch.provider or self._provider
            if created:
                self._patches[target] = patch
        return patch

    def _check_non_callable(self, target: str, parts: tuple[str, ...], new_func: Any) -> None:
        try:
            located = locate(target, parts)
        except AdaptationError:
            return
        if located.waiting_for is None and located.exists and callable(located.raw):
            raise PatchValidationError(f"{target!r} is callable but the replacement {new_func!r} is not",
                                       target=target)

    @staticmethod
    def _set_replacement(patch: Patch, new_func: Any, site: str, force: bool) -> None:
        current = patch.replacement
        if current is new_func:
            return
        if new_func is None and current is not NO_REPLACEMENT:
            return  # a placeholder never displaces a real replacement
        if current not in (NO_REPLACEMENT, None) and not force:
            raise PatchConflictError(
                f"{patch.target!r} already has replacement {current!r} registered at {patch.replacement_site}; "
                f"the registration at {site} wants {new_func!r}. Pass force_patch=True to replace it, or "
                f"register one of them as a wrap", target=patch.target, sites=(patch.replacement_site or "?", site))
        patch.replacement = new_func
        patch.replacement_site = site

    def block(self, module_name: str, *, purpose: str | None = None) -> Patch:
        """Make ``import module_name`` raise ``ModuleNotFoundError`` while this registry is applied.

        A module already imported when the block is applied leaves ``sys.modules`` (and its parent)
        and is put back by :meth:`revert`.
        """
        parts = parse_target(module_name)
        site = _caller_site()
        with self._lock:
            patch = self._patches.get(module_name)
            if patch is not None and not patch.is_block:
                raise PatchConflictError(f"{module_name!r} has patches registered ({patch.sources[0]}); "
                                         f"a module cannot be patched and blocked at once", target=module_name,
                                         sites=(patch.sources[0], site))
            if patch is None:
                patch = Patch(module_name, parts, is_block=True)
                self._remember(patch, True)
                patch.sources.append(site)
                patch.purpose = purpose
                patch.provider = self._provider
                self._patches[module_name] = patch
        return patch

    def unregister(self, target: str, new_func: Any = None) -> None:
        """Remove one wrap or the replacement ``new_func`` of ``target``, or (``None``) the whole target.

        An applied patch is reverted at once; what remains registered is applied by the next ``apply()``.

        Raises:
            TargetNotFoundError: nothing is registered for ``target``, or ``new_func`` is not registered there.
        """
        with self._op_lock:
            with self._lock:
                patch = self._patches.get(target)
                if patch is None:
                    close = suggest(target, self._patches)
                    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                    raise TargetNotFoundError(f"nothing is registered for {target!r}{hint}", target=target,
                                              missing=target, suggestions=close)
                if new_func is not None and patch.replacement is not new_func and \
                        not any(w is new_func for w, _ in patch.wraps):
                    raise TargetNotFoundError(f"{new_func!r} is not registered for {target!r}", target=target)
            self._withdraw(patch)
            with self._lock:
                if new_func is None:
                    del self._patches[target]
                    return
                if patch.replacement is new_func:
                    patch.replacement, patch.replacement_site = NO_REPLACEMENT, None
                patch.wraps = [(w, s) for w, s in patch.wraps if w is not new_func]
                if not patch.kinds:
                    del self._patches[target]

    @contextmanager
    def provider(self, name: str) -> Iterator[PatchRegistry]:
        """Attribute registrations inside the block to provider ``name``; all or nothing.

        If the block raises, every registration made inside it is withdrawn and the exception
        propagates.
        """
        with self._lock:
            scope: dict[str, Any] = {}
            self._scopes.append(scope)
            outer, self._provider = self._provider, name
        try:
            yield self
        except BaseException:
            with self._lock:
                for target, saved in scope.items():
                    if saved is None:
                        self._patches.pop(target, None)
                    else:
                        self._patches[target].restore_registration(saved)
            raise
        finally:
            with self._lock:
                self._scopes.remove(scope)
                self._provider = outer

    def _remember(self, patch: Patch, created: bool) -> None:
        for scope in self._scopes:
            if patch.target not in scope:
                scope[patch.target] = None if created else patch.registration()

    # -- apply / revert ---------------------------------------------------------------------------
    @property
    def is_applied(self) -> bool:
        return self._applied

    def apply(self) -> ApplyReport:
        """Apply every patch not applied yet; idempotent and atomic per call.

        Targets in imported modules are patched now (and ``from``-imported aliases rebound in one
        pass); the others when their module finishes importing.

        Raises:
            PatchApplyError: a patch of this batch failed; everything the batch changed was undone.
        """
        with self._op_lock:
            with self._lock:
                was_applied, self._applied = self._applied, True
                batch = [p for p in self._patches.values() if p.state in ("registered", "reverted")]
            try:
                if batch:
                    self._apply_batch(batch)
            except BaseException:
                with self._lock:
                    self._applied = was_applied
                raise
            return self.report()

    def _apply_batch(self, batch: list[Patch]) -> None:
        journal: list[Record] = []
        aliases: dict[str, list[AliasEntry]] = {}
        armed: list[Patch] = []
        states: dict[Patch, str] = {}
        current: Patch | None = None
        try:
            for current in batch:
                unmet = unmet_requirements(current.requires) if current.requires else ()
                if unmet:
                    states[current] = "skipped"
                    current.reason = "; ".join(unmet)
                elif current.is_block:
                    watcher.block(current.target, id(self), self.name)
                    armed.append(current)
                    evict_module(journal, current.target, current)
                    states[current] = "applied"
                else:
                    entry = self._place(current, journal, armed)
                    states[current] = "pending-import" if current.watching and not current.records else "applied"
                    if entry is not None:
                        aliases.setdefault(current.target.rpartition(".")[2], []).append(entry)
            current = None
            rebind_aliases(journal, aliases)
        except BaseException as error:
            undo_all(journal)
            self._disarm(armed)
            for patch in batch:
                patch.reset()
            if not isinstance(error, Exception):
                raise
            target = current.target if current is not None else None
            raise PatchApplyError(f"applying {target!r} failed ({type(error).__name__}: {error}); every "
                                  f"change of this apply() was undone", target=target) from error
        with self._lock:
            self._journal.extend(journal)
            for patch, state in states.items():
                patch.state = state
                if state == "applied" and not patch.is_block:
                    logger.debug("mindspeed_ms[%s]: patched %s", self.name, patch.target)
        for patch in batch:
            if patch.warnings:
                logger.warning("mindspeed_ms[%s]: %s: %s", self.name, patch.target, "; ".join(patch.warnings))

    def _place(self, patch: Patch, journal: list[Record], armed: list[Patch]) -> AliasEntry | None:
        """Install ``patch`` now if its module is imported, else arm the hook for the module it waits for."""
        while True:
            try:
                located = locate(patch.target, patch.parts)
            except TargetNotFoundError as error:
                if not patch.create_dummy:
                    raise
                located = stub_chain(patch, error, journal)
            wait_for = located.waiting_for or located.module_name
            if wait_for and patch.watching != wait_for:
                self._watch(patch, wait_for)
                armed.append(patch)
                if located.waiting_for is not None and located.waiting_for in sys.modules:
                    continue  # imported meanwhile: look again
            if located.waiting_for is not None:
                return None
            records: list[Record] = []
            try:
                entry = install(patch, located, records, strict=self.strict, traced=self.trace)
            except BaseException:
                undo_all(records)
                raise
            patch.records.extend(records)
            journal.extend(records)
            return entry

    def _watch(self, patch: Patch, module_name: str) -> None:
        with self._lock:
            if patch.watching is not None:
                self._unwait(patch)
            patch.watching = module_name
            waiting = self._waiting.get(module_name)
            if waiting is not None:
                waiting.append(patch)
                return
            self._waiting[module_name] = [patch]
        watcher.watch(module_name, id(self), self._on_import)

    def _unwait(self, patch: Patch) -> str | None:
        name = patch.watching
        waiting = self._waiting.get(name or "", [])
        if patch in waiting:
            waiting.remove(patch)
        patch.watching = None
        if name is not None and not waiting:
            self._waiting.pop(name, None)
            return name
        return None

    def _disarm(self, patches: list[Patch]) -> None:
        idle: list[str] = []
        blocks: list[str] = []
        with self._lock:
            for patch in patches:
                if patch.is_block:
                    blocks.append(patch.target)
                else:
                    name = self._unwait(patch)
                    if name is not None:
                        idle.append(name)
        watcher.unwatch(idle, id(self))
        watcher.unblock(blocks, id(self))

    def _on_import(self, module: ModuleType) -> None:
        """Import hook: the module finished executing (first import, reload or re-import)."""
        name = module.__name__
        with self._lock:
            if not self._applied:
                return
            generation = self._generation
            patches = list(self._waiting.get(name, ()))
        journal: list[Record] = []
        for patch in patches:
            stale = [r for r in patch.records if r.owner is module or r.kind == "module"]
            for record in stale:
                record.alive = False
            patch.records = [r for r in patch.records if r.alive]
            try:
                self._place(patch, journal, [])
            except Exception as error:
                if self.strict:
                    undo_all(journal)
                    raise PatchApplyError(f"patching {patch.target!r} on import of {name!r} failed "
                                          f"({type(error).__name__}: {error}); the module's patches were "
                                          f"rolled back", target=patch.target) from error
                patch.state, patch.reason = "failed", f"{type(error).__name__}: {error}"
                logger.error("mindspeed_ms[%s]: patching %s on import of %s failed: %s", self.name,
                             patch.target, name, patch.reason)
                continue
            with self._lock:
                if generation != self._generation:
                    undo_all(patch.records)
                    return
                patch.state = "applied" if patch.records else "pending-import"
                patch.reason = None
        with self._lock:
            self._journal.extend(journal)

    def revert(self) -> None:
        """Undo everything applied, in reverse order; disarm hooks, lift blocks. Idempotent."""
        with self._op_lock:
            with self._lock:
                if not self._applied:
                    return
                self._applied = False
                self._generation += 1
                journal, self._journal = self._journal, []
                patches = list(self._patches.values())
            self._disarm(patches)
            undo_all(journal)
            with self._lock:
                for patch in patches:
                    if patch.state != "registered":
                        patch.state = "reverted"
                    patch.reset()

    def _withdraw(self, patch: Patch) -> None:
        """Revert one patch at once (``unregister`` of an applied patch)."""
        self._disarm([patch])
        with self._lock:
            records = [r for r in self._journal if r.patch is patch]
            self._journal = [r for r in self._journal if r.patch is not patch]
        undo_all(records)
        with self._lock:
            patch.state = "registered"
            patch.reset()

    @contextmanager
    def applied(self) -> Iterator[ApplyReport]:
        """Apply on entry, revert on exit (also when the block raises)."""
        report = self.apply()
        try:
            yield report
        finally:
            self.revert()

    # -- status -----------------------------------------------------------------------------------
    def status(self) -> list[PatchStatus]:
        """Return a snapshot of every patch, in registration order."""
        with self._lock:
            return [patch.status(self.trace) for patch in self._patches.values()]

    def report(self) -> ApplyReport:
        """Count the patches per state."""
        statuses = tuple(self.status())
        counts = {state: 0 for state in STATES}
        for status in statuses:
            counts[status.state] += 1
        return ApplyReport(self.name, counts, statuses)

    def __len__(self) -> int:
        return len(self._patches)

    def __contains__(self, target: object) -> bool:
        return target in self._patches

    def __repr__(self) -> str:
        return f"<PatchRegistry {self.name!r}: {len(self._patches)} patches, applied={self._applied}>"
