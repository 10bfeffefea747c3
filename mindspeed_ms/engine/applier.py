"""Applying a registry's patches: one install path for a batch (``apply()``) and for a module just imported.

Both go through :meth:`Applier._run`: for each record, resolve its target and install it there
(:mod:`.install`), keeping the records of every change in the unit's journal; then one pass rebinds
the ``from``-imported aliases of everything installed; then the unit is committed (its journal joins
the applier's, the states change) or, if anything failed that the policy does not tolerate, undone
as a whole. A batch tolerates nothing but a missing target under ``missing_targets="skip"``; on
import, outside strict mode, a failing patch is marked ``failed`` and the module's other patches
still go in (an import should not fail because of a patch).

The :class:`Applier` knows nothing of the registry that owns it: it gets the registry's data lock
(a leaf lock: never held while user code runs or anything is imported), its records by target,
its :class:`ApplyOptions` and the import watcher to subscribe to.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .aliases import AliasEntry, rebind_aliases, restore_aliases
from .errors import PatchApplyError, TargetNotFoundError
from .install import install, install_dummy_module, is_dummy_module, resolve
from .journal import Record, discard, evict_module, undo_all
from .patch_record import PatchRecord
from .targets import Located
from .watcher import ImportWatcher

__all__ = ["Applier", "ApplyOptions", "MISSING_TARGET_POLICIES"]

logger = logging.getLogger("mindspeed_ms")

#: What apply() may do with a missing target (see :class:`ApplyOptions`).
MISSING_TARGET_POLICIES = ("error", "skip")

#: What a strict apply stopped by a missing target says to do when the target is stale upstream (a
#: registration written for another version of the code it patches), as MindSpeed-LLM 2.2.0's is.
_SKIP_HINT = ("; if the target no longer exists in the installed version (a stale upstream registration), skip "
              "such targets visibly with missing_targets='skip' (MINDSPEED_MS_MISSING_TARGETS=skip for the "
              "adaptor's registry)")


@dataclass
class ApplyOptions:
    """How a registry applies (its owner may change them between applies).

    Attributes:
        name: shown in logs and errors.
        strict: signature mismatches and failures on import are errors, not warnings.
        trace: wrap every installed callable in a counting shim.
        missing_targets: ``"error"`` or ``"skip"`` (see :class:`~mindspeed_ms.engine.registry.PatchRegistry`).
    """

    name: str = "default"
    strict: bool = False
    trace: bool = False
    missing_targets: str = "error"


@dataclass
class _Unit:
    """What one pass of the install path changed, until it is committed or undone."""

    module: ModuleType | None  # None: a batch (apply()); else the module that finished importing
    generation: int
    journal: list[Record] = field(default_factory=list)
    aliases: list[AliasEntry] = field(default_factory=list)
    armed: list[PatchRecord] = field(default_factory=list)
    #: the outcome of each record: (state, reason)
    states: dict[PatchRecord, tuple[str, str | None]] = field(default_factory=dict)
    #: outcomes before the unit, restored if it is undone
    prior: dict[PatchRecord, tuple[Any, ...]] = field(default_factory=dict)
    current: PatchRecord | None = None


class Applier:
    """What a registry has applied, and the machinery to apply, defer and revert it.

    Args:
        options: the owner's apply options (read at each apply and each import).
        lock: the owner's data lock, guarding the records and this applier's state alike.
        records: the owner's records by target (read only: which records are still registered).
        watcher: the import watcher deferred patches and blocks subscribe to.
    """

    def __init__(self, options: ApplyOptions, lock: threading.RLock, records: Mapping[str, PatchRecord],
                 watcher: ImportWatcher) -> None:
        self.options = options
        self._lock = lock
        self._records = records
        self.watcher = watcher
        self.journal: list[Record] = []
        self.waiting: dict[str, list[PatchRecord]] = {}
        self.applied = False
        self.generation = 0

    # -- the two entries: a batch, and a module that finished importing --------------------------
    def apply(self, batch: list[PatchRecord]) -> None:
        """Mark the owner applied and apply ``batch`` as one unit; on failure everything is as before.

        Raises:
            PatchApplyError: a patch of the batch failed; every change of the batch was undone.
        """
        with self._lock:
            was_applied, self.applied = self.applied, True
            generation = self.generation
        if not batch:
            return
        # patches changed after they were applied are installed again on top of themselves
        unit = _Unit(None, generation, prior={patch: patch.outcome() for patch in batch if patch.dirty})
        try:
            self._run(batch, unit)
        except BaseException:
            with self._lock:
                self.applied = was_applied
            raise

    def on_import(self, module: ModuleType) -> None:
        """Import hook: the module finished executing (first import, reload or re-import).

        The module's patches go in as one unit: their records join the journal, and their states
        change, only if no ``revert()`` ran meanwhile (else they are undone here), so a revert racing
        with this hook in another thread never leaves a patch installed. In strict mode a failure
        undoes the whole unit and fails the import.
        """
        with self._lock:
            if not self.applied:
                return
            unit = _Unit(module, self.generation)
            patches = list(self.waiting.get(module.__name__, ()))
        for patch in patches:
            for record in patch.records:
                if record.owner is module or record.kind == "module":
                    discard(record)  # the module executed anew: that slot holds a fresh original
            patch.records = [r for r in patch.records if r.alive]
            unit.prior[patch] = patch.outcome()
        self._run(patches, unit)

    # -- the install path: resolve -> install -> record, then one alias pass, then commit ---------
    def _run(self, patches: list[PatchRecord], unit: _Unit) -> None:
        try:
            for patch in patches:
                unit.current = patch
                try:
                    unit.states[patch] = self._place(patch, unit)
                except Exception as error:
                    unit.states[patch] = self._tolerate(patch, error, unit)
            unit.current = None
            rebind_aliases(unit.journal, unit.aliases)
        except BaseException as error:
            self._undo(unit)
            failure = self._failure(unit.current, error, unit)
            if failure is None:
                raise
            raise failure from error
        self._commit(unit)

    def _place(self, patch: PatchRecord, unit: _Unit) -> tuple[str, str | None]:
        """Resolve ``patch``'s target, install it there and record it; return its state and why."""
        if unit.module is None:  # a batch chooses again what to install
            chosen = self._choose(patch, unit)
            if chosen is not None:
                return chosen
        if is_dummy_module(patch):
            stub = install_dummy_module(patch, unit.journal, self.watcher.is_blocked)
            if stub is not None:
                self.watcher.mark_seen(stub.name, stub.new)
            return ("applied", None)
        located = self._resolve_or_arm(patch, unit)
        if located is None:
            return ("applied" if patch.records else "pending-import", None)
        installed = len(patch.records)
        entry = install(patch, located, unit.journal, strict=self.options.strict, traced=self.options.trace,
                        later=self._registered_after)
        for record in patch.records[installed:]:
            if record.kind == "module":
                self.watcher.mark_seen(record.name, record.new)
        if entry is not None:
            unit.aliases.append(entry)
        return ("applied" if patch.records or not patch.watching else "pending-import", None)

    def _choose(self, patch: PatchRecord, unit: _Unit) -> tuple[str, str | None] | None:
        """Put a block in force, or choose what to install; return the state when there is nothing to install."""
        if patch.is_block:
            self.watcher.block(patch.target, id(self), self.options.name)
            unit.armed.append(patch)
            evict_module(unit.journal, patch.target, patch)
            return ("applied", None)
        notes = patch.select()
        if not patch.has_active:
            return ("skipped", "; ".join(notes))
        patch.notes = notes
        return None

    def _resolve_or_arm(self, patch: PatchRecord, unit: _Unit) -> Located | None:
        """Resolve ``patch``'s target; arm the hook for its module (``None``: it waits for that import).

        A patch installed now watches its own module too, to go in again if the module is reloaded.
        """
        while True:
            located = resolve(patch, unit.journal, self.watcher.is_blocked)
            wait_for = located.waiting_for or located.module_name
            if wait_for and patch.watching != wait_for:
                self._watch(patch, wait_for)
                unit.armed.append(patch)
                if located.waiting_for is not None and located.waiting_for in sys.modules:
                    continue  # imported meanwhile: look again
            return None if located.waiting_for is not None else located

    def _tolerate(self, patch: PatchRecord, error: Exception, unit: _Unit) -> tuple[str, str]:
        """Return the state of a patch that failed, if the policy lets the unit go on; else re-raise."""
        if isinstance(error, TargetNotFoundError) and self.options.missing_targets == "skip":
            # nothing of this patch was installed: locating fails before any change
            reason = f"target missing, skipped (missing_targets='skip'): {error}"
            logger.warning("mindspeed_ms[%s]: %s", self.options.name, reason)
            return ("skipped", reason)
        if unit.module is None or self.options.strict:
            raise error
        reason = f"{type(error).__name__}: {error}"
        logger.error("mindspeed_ms[%s]: patching %s on import of %s failed: %s", self.options.name, patch.target,
                     unit.module.__name__, reason)
        return ("failed", reason)

    def _failure(self, culprit: PatchRecord | None, error: BaseException, unit: _Unit) -> PatchApplyError | None:
        """Mark the culprit of an undone unit ``failed``; return the error saying so (``None``: re-raise ``error``).

        On import the culprit is marked whatever interrupted it (the module's patches are not in);
        in a batch only for an ``Exception``, and not a re-installed patch, which keeps its previous
        installation and state.
        """
        interrupted = not isinstance(error, Exception)
        if culprit is not None and (unit.module is not None or (culprit not in unit.prior and not interrupted)):
            with self._lock:
                culprit.state, culprit.reason = "failed", f"{type(error).__name__}: {error}"
        if interrupted or (culprit is None and unit.module is not None):
            return None
        target = culprit.target if culprit is not None else None
        if unit.module is not None:
            return PatchApplyError(f"patching {target!r} on import of {unit.module.__name__!r} failed "
                                   f"({type(error).__name__}: {error}); the module's patches were rolled back",
                                   target=target)
        hint = _SKIP_HINT if isinstance(error, TargetNotFoundError) else ""
        return PatchApplyError(f"applying {target!r} failed ({type(error).__name__}: {error}); every "
                               f"change of this apply() was undone{hint}", target=target)

    def _undo(self, unit: _Unit) -> None:
        """Undo everything ``unit`` changed; its patches are where they stood before it."""
        undo_all(unit.journal)
        if unit.module is None:
            self.disarm(unit.armed)
        touched = list(unit.states)
        if unit.current is not None and unit.current not in unit.states:
            touched.append(unit.current)
        with self._lock:
            for patch in touched:
                if patch not in unit.prior:
                    patch.reset()
                    continue
                # on import the patch stays armed where it is (a deeper module it waits for now)
                watching = patch.watching
                patch.restore_outcome(unit.prior[patch])
                patch.records = [r for r in patch.records if r.alive]
                if unit.module is not None:
                    patch.watching = watching

    def _commit(self, unit: _Unit) -> None:
        with self._lock:
            if unit.generation != self.generation:
                committed = False
            else:
                committed = True
                self.journal.extend(unit.journal)
                for patch, (state, reason) in unit.states.items():
                    patch.state, patch.reason = state, reason
                    if unit.module is None:
                        patch.dirty = False
        if not committed:
            # reverted meanwhile: the revert could not see these records (and reset the patches)
            undo_all(unit.journal)
            with self._lock:
                for patch in unit.states:
                    patch.records = [r for r in patch.records if r.alive]
                    patch.aliases = []
            return
        self._log(unit)

    def _log(self, unit: _Unit) -> None:
        name = self.options.name
        debug = logger.isEnabledFor(logging.DEBUG)
        for patch, (state, _) in unit.states.items():
            if debug and state == "applied" and not patch.is_block:
                logger.debug("mindspeed_ms[%s]: patched %s", name, patch.target)
            if patch.warnings:
                logger.warning("mindspeed_ms[%s]: %s: %s", name, patch.target, "; ".join(patch.warnings))

    def _registered_after(self, patch: PatchRecord, other: Any) -> bool:
        """Tell whether ``other`` is a record of the owner registered after ``patch``."""
        return isinstance(other, PatchRecord) and other.seq > patch.seq and self._records.get(other.target) is other

    # -- arming --------------------------------------------------------------------------------
    def _watch(self, patch: PatchRecord, module_name: str) -> None:
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

    def _unwait(self, patch: PatchRecord) -> str | None:
        name = patch.watching
        waiting = self.waiting.get(name or "", [])
        if patch in waiting:
            waiting.remove(patch)
        patch.watching = None
        if name is not None and not waiting:
            self.waiting.pop(name, None)
            return name
        return None

    def disarm(self, patches: list[PatchRecord]) -> None:
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

    # -- undoing -------------------------------------------------------------------------------
    def withdraw(self, patch: PatchRecord) -> None:
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

    def revert_all(self, patches: list[PatchRecord]) -> None:
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
