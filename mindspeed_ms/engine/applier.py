"""Applying a registry's patches: one atomic batch per ``apply()``, deferred ones on import, revert.

The :class:`Applier` is the registry's applying half: it owns what applying changed (a journal of
:class:`~mindspeed_ms.engine.journal.Record`), which modules it waits for, and the import-hook
callback. The registry hands it, at construction, the one data lock both use (a leaf lock: never
held while user code runs or anything is imported) and the import watcher to subscribe to.
"""

from __future__ import annotations

import logging
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from .errors import PatchApplyError, TargetNotFoundError
from .journal import (
    AliasEntry,
    Record,
    discard,
    evict_module,
    make_stub,
    rebind_aliases,
    restore_aliases,
    undo_all,
)
from .patch_record import NO_REPLACEMENT, Patch, install, stub_chain
from .targets import locate, not_found, top_level_exists
from .watcher import ImportWatcher

if TYPE_CHECKING:  # pragma: no cover
    from .registry import PatchRegistry

__all__ = ["Applier"]

logger = logging.getLogger("mindspeed_ms")

#: What a strict apply stopped by a missing target says to do when the target is stale upstream (a
#: registration written for another version of the code it patches), as MindSpeed-LLM 2.2.0's is.
_SKIP_HINT = ("; if the target no longer exists in the installed version (a stale upstream registration), skip "
              "such targets visibly with missing_targets='skip' (MINDSPEED_MS_MISSING_TARGETS=skip for the "
              "adaptor's registry)")


class Applier:
    """What a registry has applied, and the machinery to apply, defer and revert it."""

    def __init__(self, registry: PatchRegistry, lock: threading.RLock, watcher: ImportWatcher) -> None:
        self.registry = registry
        self._lock = lock
        self.watcher = watcher
        self.journal: list[Record] = []
        self.waiting: dict[str, list[Patch]] = {}
        self.applied = False
        self.generation = 0

    def apply(self, batch: list[Patch]) -> None:
        """Mark the registry applied and apply ``batch``; on failure everything is as before."""
        with self._lock:
            was_applied, self.applied = self.applied, True
        try:
            if batch:
                self.apply_batch(batch)
        except BaseException:
            with self._lock:
                self.applied = was_applied
            raise

    def apply_batch(self, batch: list[Patch]) -> None:
        journal: list[Record] = []
        aliases: dict[str, list[AliasEntry]] = {}
        armed: list[Patch] = []
        states: dict[Patch, str] = {}
        current: Patch | None = None
        # patches changed after they were applied are installed again on top of themselves
        prior = {patch: patch.outcome() for patch in batch if patch.dirty}
        try:
            for current in batch:
                notes = [] if current.is_block else current.select()
                if not current.is_block and not current.has_active:
                    states[current] = "skipped"
                    current.reason = "; ".join(notes)
                elif current.is_block:
                    self.watcher.block(current.target, id(self), self.registry.name)
                    armed.append(current)
                    evict_module(journal, current.target, current)
                    states[current] = "applied"
                else:
                    current.notes = list(notes)
                    try:
                        entry = self.place(current, journal, armed)
                    except TargetNotFoundError as missing:
                        if self.registry.missing_targets != "skip":
                            raise
                        # nothing of this patch was installed: locating fails before any change
                        states[current] = "skipped"
                        current.reason = (f"target missing, skipped (missing_targets='skip'): {missing}")
                        logger.warning("mindspeed_ms[%s]: %s", self.registry.name, current.reason)
                        continue
                    states[current] = "pending-import" if current.watching and not current.records else "applied"
                    if entry is not None:
                        aliases.setdefault(current.target.rpartition(".")[2], []).append(entry)
            current = None
            rebind_aliases(journal, aliases)
        except BaseException as error:
            undo_all(journal)
            self.disarm(armed)
            for patch in batch:
                if patch in prior:
                    patch.restore_outcome(prior[patch])
                else:
                    patch.reset()
            if not isinstance(error, Exception):
                raise
            target = current.target if current is not None else None
            if current is not None and current not in prior:
                # the culprit says so in status(); the rest of the batch stays registered, a re-installed
                # patch keeps its previous installation (and state)
                current.state, current.reason = "failed", f"{type(error).__name__}: {error}"
            hint = _SKIP_HINT if isinstance(error, TargetNotFoundError) else ""
            raise PatchApplyError(f"applying {target!r} failed ({type(error).__name__}: {error}); every "
                                  f"change of this apply() was undone{hint}", target=target) from error
        with self._lock:
            self.journal.extend(journal)
            for patch, state in states.items():
                patch.state = state
                patch.dirty = False
                if state == "applied" and not patch.is_block:
                    logger.debug("mindspeed_ms[%s]: patched %s", self.registry.name, patch.target)
        for patch in batch:
            if patch.warnings:
                logger.warning("mindspeed_ms[%s]: %s: %s", self.registry.name, patch.target, "; ".join(patch.warnings))

    def _blocked_prefix(self, patch: Patch) -> TargetNotFoundError | None:
        """For a target under a blocked module that is not imported: the not-found error stubs start from.

        A block hides a module (MSAdapter's ``transformer_engine`` shim): to a ``create_dummy=True``
        registration under it (MindSpeed registers ``transformer_engine.pytorch.*`` that way when TE is
        not installed) it is not installed, so the stub chain is created instead of waiting for an
        import the block refuses.
        """
        parts = patch.parts
        for position in range(len(parts)):
            name = ".".join(parts[: position + 1])
            if name in sys.modules:
                continue
            if not self.watcher.is_blocked(name):
                return None
            owner = sys.modules.get(".".join(parts[:position])) if position else None
            if position and owner is None:
                return None
            return not_found(patch.target, parts, position, owner)
        return None

    def _registered_after(self, patch: Patch) -> Callable[[Any], bool]:
        """Return a test: is ``other`` a patch of this registry registered after ``patch``?"""
        patches = self.registry._patches  # the registry's data, shared with its applying half

        def later(other: Any) -> bool:
            return isinstance(other, Patch) and other.seq > patch.seq and patches.get(other.target) is other

        return later

    def _dummy_module(self, patch: Patch, journal: list[Record]) -> None:
        """MindSpeed's ``register_patch('fused_layer_norm_cuda', create_dummy=True)``: an importable stub module.

        A top-level name with nothing to install: the module is created empty when it is neither
        imported nor installed (a blocked one counts as not installed); an existing one is left as it is.
        """
        name = patch.target
        if name in sys.modules or (not self.watcher.is_blocked(name) and top_level_exists(name)):
            return
        records: list[Record] = []
        make_stub(records, name, patch)
        patch.stub = True
        patch.records.extend(records)
        journal.extend(records)
        self.watcher.mark_seen(name, sys.modules[name])

    def place(self, patch: Patch, journal: list[Record], armed: list[Patch]) -> AliasEntry | None:
        """Install ``patch`` now if its module is imported, else arm the hook for the module it waits for."""
        if len(patch.parts) == 1 and patch.create_dummy and patch.active_replacement in (None, NO_REPLACEMENT) \
                and not patch.active_wraps:
            self._dummy_module(patch, journal)
            return None
        while True:
            try:
                located = locate(patch.target, patch.parts)
                if patch.create_dummy and located.waiting_for is not None:
                    hidden = self._blocked_prefix(patch)
                    if hidden is not None:  # blocked = not installed: create the stubs, as MindSpeed does
                        raise hidden
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
                entry = install(patch, located, records, strict=self.registry.strict, traced=self.registry.trace,
                                later=self._registered_after(patch))
            except BaseException:
                undo_all(records)
                raise
            patch.records.extend(records)
            journal.extend(records)
            for record in records:
                if record.kind in ("module", "stub"):
                    self.watcher.mark_seen(record.name, record.new)
            return entry

    def _watch(self, patch: Patch, module_name: str) -> None:
        with self._lock:
            if patch.watching is not None:
                self._unwait(patch)
            patch.watching = module_name
            waiting = self.waiting.get(module_name)
            if waiting is not None:
                waiting.append(patch)
                return
            self.waiting[module_name] = [patch]
        self.watcher.watch(module_name, id(self), self.on_import)

    def _unwait(self, patch: Patch) -> str | None:
        name = patch.watching
        waiting = self.waiting.get(name or "", [])
        if patch in waiting:
            waiting.remove(patch)
        patch.watching = None
        if name is not None and not waiting:
            self.waiting.pop(name, None)
            return name
        return None

    def disarm(self, patches: list[Patch]) -> None:
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
        self.watcher.unwatch(idle, id(self))
        self.watcher.unblock(blocks, id(self))

    def on_import(self, module: ModuleType) -> None:
        """Import hook: the module finished executing (first import, reload or re-import).

        The module's patches go in as one unit: their records join the registry's journal, and
        their states change, only if no ``revert()`` ran meanwhile (else they are undone here), so
        a revert racing with this hook in another thread never leaves a patch installed. In strict
        mode a failure undoes the whole unit and fails the import.
        """
        name = module.__name__
        with self._lock:
            if not self.applied:
                return
            generation = self.generation
            patches = list(self.waiting.get(name, ()))
        journal: list[Record] = []
        aliases: dict[str, list[AliasEntry]] = {}
        placed: list[Patch] = []
        failed: dict[Patch, str] = {}
        skipped: dict[Patch, str] = {}
        current: Patch | None = None
        try:
            for current in patches:
                for record in current.records:
                    if record.owner is module or record.kind == "module":
                        discard(record)  # the module executed anew: that slot holds a fresh original
                current.records = [r for r in current.records if r.alive]
                try:
                    entry = self.place(current, journal, [])
                except TargetNotFoundError as missing:
                    if self.registry.missing_targets != "skip":
                        if self.registry.strict:
                            raise
                        failed[current] = f"{type(missing).__name__}: {missing}"
                        logger.error("mindspeed_ms[%s]: patching %s on import of %s failed: %s",
                                     self.registry.name, current.target, name, failed[current])
                        continue
                    # the same policy as apply()'s for a module imported already: left out, with a warning
                    skipped[current] = f"target missing, skipped (missing_targets='skip'): {missing}"
                    logger.warning("mindspeed_ms[%s]: %s", self.registry.name, skipped[current])
                    continue
                except Exception as error:
                    if self.registry.strict:
                        raise
                    failed[current] = f"{type(error).__name__}: {error}"
                    logger.error("mindspeed_ms[%s]: patching %s on import of %s failed: %s", self.registry.name,
                                 current.target, name, failed[current])
                    continue
                placed.append(current)
                if entry is not None:
                    aliases.setdefault(current.target.rpartition(".")[2], []).append(entry)
            current = None
            rebind_aliases(journal, aliases)
        except BaseException as error:
            undo_all(journal)
            with self._lock:
                for patch in placed:
                    patch.records = [r for r in patch.records if r.alive]
                    patch.aliases = []
                if current is not None:
                    current.records = [r for r in current.records if r.alive]
                    current.state = "failed"
                    current.reason = f"{type(error).__name__}: {error}"
            if not isinstance(error, Exception) or current is None:
                raise
            raise PatchApplyError(f"patching {current.target!r} on import of {name!r} failed "
                                  f"({type(error).__name__}: {error}); the module's patches were "
                                  f"rolled back", target=current.target) from error
        with self._lock:
            if generation == self.generation:
                self.journal.extend(journal)
                for patch in placed:
                    patch.state = "applied" if patch.records else "pending-import"
                    patch.reason = None
                for patch, reason in failed.items():
                    patch.state, patch.reason = "failed", reason
                for patch, reason in skipped.items():
                    patch.state, patch.reason = "skipped", reason
                return
        undo_all(journal)  # reverted meanwhile: the revert could not see these records
        with self._lock:
            for patch in placed:
                patch.records = [r for r in patch.records if r.alive]
                patch.aliases = []

    def withdraw(self, patch: Patch) -> None:
        """Revert one patch at once (``unregister`` of an applied patch)."""
        self.disarm([patch])
        with self._lock:
            records = [r for r in self.journal if r.patch is patch]
            self.journal = [r for r in self.journal if r.patch is not patch]
        undo_all(records)
        restore_aliases(records)
        with self._lock:
            patch.state = "registered"
            patch.reset()

    def revert_all(self, patches: list[Patch]) -> None:
        """Undo everything applied, in reverse order; disarm hooks, lift blocks. Idempotent."""
        with self._lock:
            if not self.applied:
                return
            self.applied = False
            self.generation += 1
            journal, self.journal = self.journal, []
        self.disarm(patches)
        undo_all(journal)
        restore_aliases(journal)
        with self._lock:
            for patch in patches:
                if patch.state != "registered":
                    patch.state = "reverted"
                patch.reset()
